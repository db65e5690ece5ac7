// Quiet hours per message: the zone look-up by name and the decision, with
// the per-zone offset cache (the normal case: far from a DST change), near a
// change (the tz database is asked), and instants scattered over years (the
// cache misses every time). Baseline: what a message costs without the
// table and the cache, date::locate_zone + to_local on every message.
//
//   build/release/bench/quiet_hours_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <date/tz.h>

#include <array>
#include <random>
#include <string>
#include <vector>

#include "pacer/quiet_hours.h"

namespace {

using pacer::QuietWindow;
using pacer::WallTime;
using std::chrono::hours;
using std::chrono::milliseconds;

constexpr std::array<const char*, 24> kZones = {
    "America/New_York", "America/Los_Angeles", "America/Chicago",     "America/Sao_Paulo",
    "America/Santiago", "America/St_Johns",    "Europe/London",       "Europe/Berlin",
    "Europe/Moscow",    "Africa/Cairo",        "Africa/Lagos",        "Asia/Kolkata",
    "Asia/Kathmandu",   "Asia/Tokyo",          "Asia/Shanghai",       "Asia/Dubai",
    "Asia/Jakarta",     "Australia/Sydney",    "Australia/Lord_Howe", "Pacific/Chatham",
    "Pacific/Auckland", "Pacific/Honolulu",    "Atlantic/Reykjavik",  "UTC"};

const pacer::TimeZoneTablePtr& table() {
  static const pacer::TimeZoneTablePtr t = pacer::TimeZoneTable::loadSystem();
  return t;
}

const QuietWindow kWindow{hours(21), hours(8)};
// 2024-06-15 00:00 UTC: no zone above changes offset within two days of it.
const WallTime kJune = WallTime(std::chrono::sys_days{std::chrono::year{2024} / 6 / 15});
// 2024-03-10 07:00 UTC: New York springs forward.
const WallTime kNewYorkChange = WallTime(std::chrono::sys_days{std::chrono::year{2024} / 3 / 10}) + hours(7);

void BM_ZoneFind(benchmark::State& state) {
  const auto& t = table();
  std::size_t i = 0;
  std::uint64_t found = 0;
  for (auto _ : state) found += t->find(kZones[i++ % kZones.size()]).has_value();
  benchmark::DoNotOptimize(found);
}
BENCHMARK(BM_ZoneFind);

// Per message: resolve the message's zone name, then decide. Time moves
// 1 ms per 5 messages (5,000 messages/s), zones rotate.
void BM_ResolveAndCheck(benchmark::State& state) {
  pacer::QuietHours quiet(table());
  WallTime now = kJune;
  std::size_t i = 0;
  std::uint64_t quiet_count = 0;
  for (auto _ : state) {
    const pacer::ZoneResolution z = table()->resolve(kZones[i++ % kZones.size()], "UTC");
    if (i % 5 == 0) now += milliseconds(1);
    quiet_count += quiet.check(z.zone, kWindow, now).quiet;
  }
  state.counters["quiet"] =
      benchmark::Counter(static_cast<double>(quiet_count) / static_cast<double>(state.iterations()));
}
BENCHMARK(BM_ResolveAndCheck);

// The zone already resolved (a campaign default kept as a ZoneId).
void BM_CheckCached(benchmark::State& state) {
  pacer::QuietHours quiet(table());
  std::vector<pacer::ZoneId> zones;
  for (const char* n : kZones) zones.push_back(table()->require(n));
  WallTime now = kJune;
  std::size_t i = 0;
  std::uint64_t quiet_count = 0;
  for (auto _ : state) {
    now += milliseconds(1);
    quiet_count += quiet.check(zones[i++ % zones.size()], kWindow, now).quiet;
  }
  benchmark::DoNotOptimize(quiet_count);
}
BENCHMARK(BM_CheckCached);

// Within two days of New York's spring-forward: the exact DST path.
void BM_CheckNearDstChange(benchmark::State& state) {
  pacer::QuietHours quiet(table());
  const pacer::ZoneId ny = table()->require("America/New_York");
  std::int64_t k = 0;
  std::uint64_t quiet_count = 0;
  for (auto _ : state) {
    const WallTime t = kNewYorkChange - hours(24) + milliseconds((k++ * 7919) % (48 * 3600 * 1000));
    quiet_count += quiet.check(ny, kWindow, t).quiet;
  }
  benchmark::DoNotOptimize(quiet_count);
}
BENCHMARK(BM_CheckNearDstChange);

// Instants scattered over 2000-2036: the cached period never fits.
void BM_CheckCacheMiss(benchmark::State& state) {
  pacer::QuietHours quiet(table());
  const pacer::ZoneId z = table()->require("Europe/Berlin");
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<std::int64_t> ms(946'684'800'000, 2'082'758'400'000);
  std::vector<WallTime> ts(4096);
  for (WallTime& t : ts) t = WallTime(milliseconds(ms(rng)));
  std::size_t i = 0;
  std::uint64_t quiet_count = 0;
  for (auto _ : state) quiet_count += quiet.check(z, kWindow, ts[i++ % ts.size()]).quiet;
  benchmark::DoNotOptimize(quiet_count);
}
BENCHMARK(BM_CheckCacheMiss);

// Baseline: no table, no cache: look the zone up in the date library's
// database and convert on every message (what a naive implementation does).
void BM_Baseline_LocateZoneEveryMessage(benchmark::State& state) {
  (void)date::get_tzdb();
  WallTime now = kJune;
  std::size_t i = 0;
  std::uint64_t quiet_count = 0;
  for (auto _ : state) {
    now += milliseconds(1);
    const date::time_zone* z = date::locate_zone(kZones[i++ % kZones.size()]);
    const auto local = z->to_local(std::chrono::floor<std::chrono::seconds>(now));
    const auto tod = local - date::floor<date::days>(local);
    quiet_count += tod >= hours(21) || tod < hours(8);
  }
  benchmark::DoNotOptimize(quiet_count);
}
BENCHMARK(BM_Baseline_LocateZoneEveryMessage);

void BM_LoadTable(benchmark::State& state) {
  // Start-up cost: a second load re-uses the date library's parsed zones, so
  // this is the table build (names, hash map), not the file reads.
  for (auto _ : state) benchmark::DoNotOptimize(pacer::TimeZoneTable::loadSystem());
}
BENCHMARK(BM_LoadTable)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
