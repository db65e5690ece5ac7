// Quiet hours in the recipient's time zone (target pacer::rules).
//
// A campaign names a local quiet window such as 21:00-08:00; a message is held
// while the recipient's wall clock is inside it. The time zone is an IANA name
// from the message, or the campaign's default.
//
// Everything here is pure except TimeZoneTable::loadSystem(), which reads the
// OS time-zone data once at start-up. Decisions take the wall-clock instant as
// an argument; nothing reads a clock. See docs/recipient-rules.md for the
// semantics around daylight-saving changes.
#pragma once

#include "pacer/error.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "pacer/wall_time.h"

namespace pacer {

// A local quiet window [start, end) in seconds after local midnight, both in
// [0, 86400). start > end wraps midnight (21:00-08:00); start == end means
// "no quiet hours".
struct QuietWindow {
  std::chrono::seconds start{0};
  std::chrono::seconds end{0};

  bool none() const noexcept { return start == end; }
  bool wraps() const noexcept { return start > end; }
  bool valid() const noexcept;  // both ends inside one day
  friend bool operator==(const QuietWindow&, const QuietWindow&) = default;
};

struct QuietWindowParse {
  std::optional<QuietWindow> window;  // set on success
  std::string error;                  // why not, otherwise
};

// Parses "HH:MM-HH:MM" (also "HH:MM:SS"; "24:00" as an end means midnight;
// "" or "none" means no quiet hours). Pure; never throws.
QuietWindowParse parseQuietWindow(std::string_view text);
// "21:00-08:00" (seconds shown only when non-zero; "none" for no window).
std::string formatQuietWindow(const QuietWindow& window);

// A zone of one TimeZoneTable: a small index, cheap to copy and to store per
// message or per campaign. Tables loaded from the same tzdata number zones
// the same way (sorted by name).
class ZoneId {
 public:
  constexpr ZoneId() = default;
  constexpr std::uint32_t index() const noexcept { return index_; }
  friend constexpr bool operator==(ZoneId, ZoneId) = default;

 private:
  friend class TimeZoneTable;
  constexpr explicit ZoneId(std::uint32_t i) noexcept : index_(i) {}
  std::uint32_t index_ = 0;
};

enum class ZoneStatus : std::uint8_t {
  kOk,
  kUnknownZone,  // a name was given but the tz database has no such zone
  kNoZone,       // neither the message nor the campaign names a zone
};
std::string_view toString(ZoneStatus s) noexcept;

struct ZoneResolution {
  ZoneStatus status = ZoneStatus::kNoZone;
  ZoneId zone;                // valid when status == kOk
  bool from_default = false;  // the campaign's default was used
};

// Start-up errors: no tz database, or a campaign default that is not a zone.
class TimeZoneError : public InvalidError {
 public:
  using InvalidError::InvalidError;
};

// Zone names -> zones, built once from the OS tz database
// (/usr/share/zoneinfo through Howard Hinnant's date library). Immutable
// after construction, so one table may be shared by every thread.
class TimeZoneTable {
 public:
  // Reads every zone of the OS tz database now (about 600 files, ~50 ms), so
  // later look-ups do no I/O. Throws TimeZoneError when the database is
  // missing or empty.
  static std::shared_ptr<const TimeZoneTable> loadSystem();

  ~TimeZoneTable();
  TimeZoneTable(const TimeZoneTable&) = delete;
  TimeZoneTable& operator=(const TimeZoneTable&) = delete;

  // Exact, case-sensitive IANA name ("Europe/London", also backward links
  // such as "Asia/Calcutta"). "localtime" (the host's zone) is not a
  // recipient's zone and is not found. O(1) hash look-up; no allocation.
  std::optional<ZoneId> find(std::string_view name) const noexcept;
  // The zone for a message: its own zone if non-empty (an unknown name is
  // kUnknownZone, never silently replaced by the default), else the
  // campaign's default, else kNoZone.
  ZoneResolution resolve(std::string_view message_zone, std::string_view campaign_default) const noexcept;
  // Throws TimeZoneError naming `name` when it is not a zone (config checks).
  ZoneId require(std::string_view name) const;

  std::string_view name(ZoneId zone) const noexcept;
  std::size_t size() const noexcept;
  // The tzdata release ("2025b"), read from tzdata.zi; "unknown" without it.
  const std::string& version() const noexcept;

  struct Impl;  // defined in src/core/rules; holds date::time_zone pointers
  const Impl& impl() const noexcept { return *impl_; }

 private:
  explicit TimeZoneTable(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};
using TimeZoneTablePtr = std::shared_ptr<const TimeZoneTable>;

struct QuietCheck {
  bool quiet = false;
  WallTime allowed_at{};  // the first instant >= t outside quiet hours (t itself when !quiet)
};

// The quiet-hours decision for one worker thread. It keeps, per zone, the
// UTC-offset period it saw last, so a decision away from a DST change is a
// few integer operations; near a change it asks the tz database.
// Not thread-safe: one per thread (they may share the table).
class QuietHours {
 public:
  explicit QuietHours(TimeZoneTablePtr table);

  // Is `t` inside the window in `zone`? Precondition: `zone` comes from this
  // table (or one loaded from the same tzdata). window.none() -> false.
  bool isQuiet(ZoneId zone, const QuietWindow& window, WallTime t) noexcept;
  // The first instant >= t at which isQuiet is false (t itself if it is).
  // Never more than about a day after t.
  WallTime nextAllowed(ZoneId zone, const QuietWindow& window, WallTime t) noexcept;
  // Both at once (one look-up).
  QuietCheck check(ZoneId zone, const QuietWindow& window, WallTime t) noexcept;

  const TimeZoneTable& table() const noexcept { return *table_; }

 private:
  struct Period {  // [begin_ms, end_ms) in UTC with one offset
    std::int64_t begin_ms = 0;
    std::int64_t end_ms = 0;  // empty until first used
    std::int64_t offset_ms = 0;
  };
  const Period& periodAt(ZoneId zone, std::int64_t t_ms) noexcept;
  QuietCheck slowCheck(ZoneId zone, const QuietWindow& window, std::int64_t t_ms) noexcept;

  TimeZoneTablePtr table_;
  std::vector<Period> periods_;  // by zone index
  ZoneId utc_;                   // stands in for an index this table does not have
};

}  // namespace pacer
