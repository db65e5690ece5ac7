// What TimeZoneTable holds: the date library's zones, by index and by name.
// Private to pacer::rules, so the public header stays free of <date/tz.h>.
#pragma once

#include <date/tz.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pacer/quiet_hours.h"

namespace pacer {

struct TimeZoneTable::Impl {
  std::vector<const date::time_zone*> zones;  // by ZoneId index, sorted by name
  std::vector<std::string> names;             // the same order
  // Views into `names`, which never change after loading: find() hashes the
  // caller's string_view without allocating.
  std::unordered_map<std::string_view, std::uint32_t> by_name;
  std::string version = "unknown";
};

}  // namespace pacer
