// TimeZoneTable: the OS tz database (Debian's tzdata in /usr/share/zoneinfo,
// read by the date library built with USE_OS_TZDB=1), loaded once.
#include <algorithm>
#include <fstream>

#include "time_zone_table_impl.h"

namespace pacer {
namespace {

// tzdata.zi starts with "# version 2025b"; the date library's OS mode does
// not report the release, operators want to know which rules are in force.
std::string readTzdataVersion() {
  std::ifstream in("/usr/share/zoneinfo/tzdata.zi");
  std::string line;
  if (!std::getline(in, line)) return "unknown";
  constexpr std::string_view kTag = "# version ";
  if (!line.starts_with(kTag)) return "unknown";
  return line.substr(kTag.size());
}

// The host's own zone ("localtime" is a symlink to /etc/localtime) says
// nothing about where a recipient lives.
bool recipientZoneName(std::string_view name) { return name != "localtime" && !name.empty(); }

}  // namespace

std::shared_ptr<const TimeZoneTable> TimeZoneTable::loadSystem() {
  auto impl = std::make_unique<Impl>();
  try {
    const date::tzdb& db = date::get_tzdb();
    std::vector<const date::time_zone*> zones;
    zones.reserve(db.zones.size());
    for (const date::time_zone& z : db.zones) {
      if (!recipientZoneName(z.name())) continue;
      try {
        // The date library reads a zone's file on first use; do it now so
        // no decision ever waits on the disk.
        (void)z.get_info(date::sys_seconds{});
      } catch (const std::exception&) {
        continue;  // an unreadable file: that name resolves to kUnknownZone
      }
      zones.push_back(&z);
    }
    std::sort(zones.begin(), zones.end(),
              [](const date::time_zone* a, const date::time_zone* b) { return a->name() < b->name(); });
    impl->zones = std::move(zones);
  } catch (const std::exception& e) {
    throw TimeZoneError(std::string("cannot load the time-zone database (is tzdata installed?): ") + e.what());
  }
  if (impl->zones.empty()) throw TimeZoneError("the time-zone database has no zones (is tzdata installed?)");
  impl->names.reserve(impl->zones.size());
  for (const date::time_zone* z : impl->zones) impl->names.emplace_back(z->name());
  impl->by_name.reserve(impl->names.size());
  for (std::uint32_t i = 0; i < impl->names.size(); ++i) impl->by_name.emplace(impl->names[i], i);
  impl->version = readTzdataVersion();
  return std::shared_ptr<const TimeZoneTable>(new TimeZoneTable(std::move(impl)));
}

TimeZoneTable::TimeZoneTable(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TimeZoneTable::~TimeZoneTable() = default;

std::optional<ZoneId> TimeZoneTable::find(std::string_view name) const noexcept {
  const auto it = impl_->by_name.find(name);
  if (it == impl_->by_name.end()) return std::nullopt;
  return ZoneId(it->second);
}

ZoneResolution TimeZoneTable::resolve(std::string_view message_zone, std::string_view campaign_default) const noexcept {
  ZoneResolution r;
  const bool from_default = message_zone.empty();
  const std::string_view name = from_default ? campaign_default : message_zone;
  r.from_default = from_default;
  if (name.empty()) {
    r.status = ZoneStatus::kNoZone;
    return r;
  }
  const std::optional<ZoneId> z = find(name);
  r.status = z ? ZoneStatus::kOk : ZoneStatus::kUnknownZone;
  if (z) r.zone = *z;
  return r;
}

ZoneId TimeZoneTable::require(std::string_view name) const {
  const std::optional<ZoneId> z = find(name);
  if (!z) throw TimeZoneError("unknown time zone '" + std::string(name) + "' (tzdata " + impl_->version + ")");
  return *z;
}

std::string_view TimeZoneTable::name(ZoneId zone) const noexcept {
  return zone.index() < impl_->names.size() ? std::string_view(impl_->names[zone.index()]) : std::string_view();
}

std::size_t TimeZoneTable::size() const noexcept { return impl_->zones.size(); }
const std::string& TimeZoneTable::version() const noexcept { return impl_->version; }

std::string_view toString(ZoneStatus s) noexcept {
  switch (s) {
    case ZoneStatus::kOk: return "ok";
    case ZoneStatus::kUnknownZone: return "unknown time zone";
    case ZoneStatus::kNoZone: return "no time zone";
  }
  return "?";
}

}  // namespace pacer
