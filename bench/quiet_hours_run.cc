// quiet_hours_run: a real WorkerCore over 48 simulated hours, 24 time zones,
// one campaign with quiet hours 21:00-08:00, judged by an independent oracle.
//
// The core decides with pacer::rules (Howard Hinnant's date library); the
// oracle here uses glibc's localtime_r with TZ set per zone (single thread),
// so the two share only the tz data files. It checks:
//   - no send at a local time inside 21:00-08:00 in the recipient's zone;
//   - at most rate + burst sends in any 1-second window (invariant 1), and
//     reports the most per second after each window opens (no burst at 08:00);
//   - every message is sent or has a ledger row.
// The run covers 10 March 2024, when the US zones spring forward. Half the
// messages are a backlog at the start, the rest arrive evenly over 40 hours,
// so every zone's night leaves a backlog for its 08:00.
//
//   quiet_hours_run [MESSAGES] [RATE] [BURST]     (bench/quiet_hours_run.sh builds and runs it)
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "pacer/worker.h"

namespace {

using namespace pacer;
using std::chrono::milliseconds;
using std::chrono::seconds;

const std::vector<std::string> kZones = {
    "Pacific/Honolulu", "America/Anchorage", "America/Los_Angeles", "America/Denver",   "America/Chicago",
    "America/New_York", "America/Sao_Paulo", "Atlantic/Azores",     "Europe/London",    "Europe/Paris",
    "Europe/Helsinki",  "Europe/Moscow",     "Asia/Dubai",          "Asia/Karachi",     "Asia/Kolkata",
    "Asia/Kathmandu",   "Asia/Dhaka",        "Asia/Bangkok",        "Asia/Shanghai",    "Asia/Tokyo",
    "Australia/Adelaide", "Australia/Sydney", "Pacific/Auckland",   "Pacific/Chatham"};

// Every outcome counted, nothing kept per message.
class CountingLedger final : public LedgerInterface {
 public:
  std::size_t record(std::span<const DeliveryRecord> rows) override {
    for (const DeliveryRecord& r : rows) ++by_status[deliveryStatusName(r.status)];
    return rows.size();
  }
  std::vector<std::int64_t> finishedOffsets(const std::string&, std::int32_t, std::int64_t, std::int64_t) override {
    return {};
  }
  void recordReceipts(std::span<const DeliveryReceipt>) override {}
  std::map<std::string_view, std::size_t> by_status;
};

// Parking in memory, ordered by not_before then arrival, as claim() reads it.
class TimedParking final : public ParkingInterface {
 public:
  std::size_t park(std::span<const Message> ms, std::span<const WallTime> nb) override {
    std::size_t fresh = 0;
    for (std::size_t i = 0; i < ms.size(); ++i) {
      if (!ids_.insert(ms[i].id).second) continue;
      by_time_[ms[i].campaign].emplace(std::make_pair(nb.empty() ? WallTime{} : nb[i], seq_++), ms[i]);
      ++fresh;
    }
    max_parked = std::max(max_parked, ids_.size());
    return fresh;
  }
  std::vector<Message> claim(const std::string& campaign, std::size_t max, WallTime now) override {
    auto& q = by_time_[campaign];
    std::vector<Message> out;
    while (!q.empty() && out.size() < max && q.begin()->first.first <= now) {
      ids_.erase(q.begin()->second.id);
      out.push_back(std::move(q.begin()->second));
      q.erase(q.begin());
    }
    return out;
  }
  std::vector<std::pair<std::string, std::size_t>> unclaimed() override { return {}; }
  void renew() override {}
  std::size_t release() override { return 0; }
  std::size_t max_parked = 0;
  std::size_t size() const { return ids_.size(); }

 private:
  std::unordered_set<std::string> ids_;
  std::map<std::string, std::multimap<std::pair<WallTime, std::uint64_t>, Message>> by_time_;
  std::uint64_t seq_ = 0;
};

struct Send {
  std::int64_t wall_ms;
  std::uint16_t zone;
};

// Accepts at once; notes each send's simulated wall time and zone.
class RecordingSink final : public SinkInterface {
 public:
  explicit RecordingSink(const std::unordered_map<std::string, std::uint16_t>& zone_of) : zone_of_(zone_of) {}
  bool submit(const Message& m, std::uint64_t ticket) override {
    sends.push_back(Send{wall_ms, zone_of_.at(m.time_zone)});
    SendResult r;
    r.ticket = ticket;
    done_.push_back(std::move(r));
    return true;
  }
  void poll(std::vector<SendResult>& out) override {
    for (SendResult& r : done_) out.push_back(std::move(r));
    done_.clear();
  }
  std::size_t inFlight() const override { return done_.size(); }
  std::size_t maxInFlight() const override { return 10'000; }
  void wait(Nanos) override {}
  void pollReceipts(std::vector<DeliveryReceipt>&) override {}
  std::int64_t wall_ms = 0;
  std::vector<Send> sends;

 private:
  const std::unordered_map<std::string, std::uint16_t>& zone_of_;
  std::vector<SendResult> done_;
};

// glibc's view of a zone: local time and UTC offset at `t`.
struct Local {
  int seconds_of_day;
  long gmtoff;
};
Local localAt(std::int64_t wall_ms) {
  const std::time_t t = static_cast<std::time_t>(wall_ms / 1000);
  std::tm tm{};
  localtime_r(&t, &tm);
  return Local{tm.tm_hour * 3600 + tm.tm_min * 60 + tm.tm_sec, tm.tm_gmtoff};
}
void useZone(const std::string& zone) {
  setenv("TZ", zone.c_str(), 1);
  tzset();
}
bool quietAt(int sod) { return sod >= 21 * 3600 || sod < 8 * 3600; }

// The most sends in any 1-second window [t, t+1s) starting in [from, to).
std::size_t maxPerSecond(const std::vector<std::int64_t>& sorted, std::int64_t from, std::int64_t to) {
  std::size_t best = 0;
  auto lo = std::lower_bound(sorted.begin(), sorted.end(), from);
  for (auto it = lo; it != sorted.end() && *it < to; ++it) {
    const auto hi = std::lower_bound(it, sorted.end(), *it + 1000);
    best = std::max(best, static_cast<std::size_t>(hi - it));
  }
  return best;
}

struct RunResult {
  std::size_t offered = 0;
  std::vector<Send> sends;
  std::map<std::string_view, std::size_t> rows;
  std::size_t max_parked = 0;
  std::size_t max_in_memory = 0;
  std::size_t waiting_at_end = 0;  // parked or in memory when the run stops (their night not over)
};

RunResult simulate(std::size_t messages, double rate, double burst, WallTime start, Nanos length) {
  std::unordered_map<std::string, std::uint16_t> zone_of;
  for (std::size_t i = 0; i < kZones.size(); ++i) zone_of[kZones[i]] = static_cast<std::uint16_t>(i);
  CountingLedger ledger;
  TimedParking parking;
  RecordingSink sink(zone_of);
  WorkerOptions o;
  o.zones = TimeZoneTable::loadSystem();
  MonoTime now = monoAt(seconds(1));
  WorkerCore core(o, ledger, sink, &parking, now);
  core.setWallClock(start, now);
  CampaignInfo c;
  c.id = "night-owls";
  c.limit = RateLimit{rate, burst};
  c.quiet_hours = "21:00-08:00";
  core.upsertCampaign(c, now);
  RunResult out;
  const MonoTime end = now + length;
  std::size_t last_sends = 0;
  while (now < end) {
    const WallTime wall = start + std::chrono::duration_cast<milliseconds>(now - monoAt(seconds(1)));
    sink.wall_ms = wall.time_since_epoch().count();
    core.setWallClock(wall, now);
    // Half the messages are a backlog at the start; the rest arrive evenly over 40 hours.
    const double spread = std::min(1.0, std::chrono::duration<double>(now - monoAt(seconds(1))) / std::chrono::hours(40));
    const auto due = static_cast<std::size_t>(static_cast<double>(messages) * (0.5 + 0.5 * spread));
    for (; out.offered < due && core.wantsMore(); ++out.offered) {
      RawMessage r;
      r.position = Position{"campaigns", 0, static_cast<std::int64_t>(out.offered)};
      r.key = c.id;
      r.headers = {{"recipient", fmt::format("+{}", 100000000 + out.offered)},
                   {"tz", kZones[out.offered % kZones.size()]}};
      r.value = "hello";
      core.offer(std::move(r), now);
    }
    core.step(now);
    const WorkerStats s = core.stats();
    out.max_in_memory = std::max(out.max_in_memory, s.buffered_messages);
    // 5 ms steps while sending (the daemon's tick), 100 ms while everything waits.
    const bool busy = sink.sends.size() != last_sends || s.buffered_messages > s.waiting || s.pending_rows > 0;
    last_sends = sink.sends.size();
    now += busy ? Nanos(milliseconds(5)) : Nanos(milliseconds(100));
  }
  core.flush(now);
  out.waiting_at_end = parking.size() + core.stats().buffered_messages;
  out.sends = std::move(sink.sends);
  out.rows = ledger.by_status;
  out.max_parked = parking.max_parked;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t messages = argc > 1 ? std::stoul(argv[1]) : 100'000;
  const double rate = argc > 2 ? std::stod(argv[2]) : 50;
  const double burst = argc > 3 ? std::stod(argv[3]) : 10;
  using namespace std::chrono;
  const WallTime start{sys_days{year{2024} / 3 / 9} + hours(12)};  // 07:00 EST; US clocks change in 38 h
  const Nanos length = hours(48);
  const auto t0 = steady_clock::now();
  RunResult r = simulate(messages, rate, burst, start, length);
  const double run_s = duration<double>(steady_clock::now() - t0).count();

  // The oracle, zone by zone (TZ is process-wide: switched once per zone).
  std::vector<std::vector<std::int64_t>> by_zone(kZones.size());
  std::vector<std::int64_t> all;
  for (const Send& s : r.sends) {
    by_zone[s.zone].push_back(s.wall_ms);
    all.push_back(s.wall_ms);
  }
  std::sort(all.begin(), all.end());
  const std::int64_t start_ms = start.time_since_epoch().count();
  const std::int64_t end_ms = start_ms + duration_cast<milliseconds>(length).count();
  std::size_t inside = 0;
  std::vector<std::string> dst_zones;
  fmt::print("zone                  sends  in-quiet  window opens (UTC): sends of the zone in its first minute, "
             "max/s all\n");
  for (std::size_t z = 0; z < kZones.size(); ++z) {
    useZone(kZones[z]);
    std::size_t zone_inside = 0;
    for (std::int64_t t : by_zone[z])
      if (quietAt(localAt(t).seconds_of_day)) ++zone_inside;
    inside += zone_inside;
    std::string opens;
    long first_off = localAt(start_ms).gmtoff;
    bool changed = false;
    bool was_quiet = quietAt(localAt(start_ms).seconds_of_day);
    for (std::int64_t t = start_ms + 1000; t < end_ms; t += 1000) {
      const Local l = localAt(t);
      changed = changed || l.gmtoff != first_off;
      const bool q = quietAt(l.seconds_of_day);
      if (was_quiet && !q) {
        auto& v = by_zone[z];
        const auto n = std::lower_bound(v.begin(), v.end(), t + 60'000) - std::lower_bound(v.begin(), v.end(), t);
        const std::time_t tt = t / 1000;
        std::tm u{};
        gmtime_r(&tt, &u);
        opens += fmt::format("  {:02}-{:02} {:02}:{:02}: {}, {}", u.tm_mon + 1, u.tm_mday, u.tm_hour, u.tm_min, n,
                             maxPerSecond(all, t, t + 60'000));
      }
      was_quiet = q;
    }
    if (changed) dst_zones.push_back(kZones[z]);
    fmt::print("{:<20} {:>6}  {:>8} {}\n", kZones[z], by_zone[z].size(), zone_inside, opens);
  }
  const std::size_t max_s = maxPerSecond(all, start_ms - 1000, end_ms);
  fmt::print("\nzones {}, messages {}, sends {}, ledger rows:", kZones.size(), r.offered, r.sends.size());
  for (const auto& [status, n] : r.rows) fmt::print(" {} {}", status, n);
  fmt::print(", waiting at the end (parked or in memory, their night not over): {}\n", r.waiting_at_end);
  fmt::print("sent inside quiet windows (glibc localtime_r): {}\n", inside);
  fmt::print("max sends in any 1 s: {} (rate {} + burst {} = {})\n", max_s, rate, burst, rate + burst);
  fmt::print("zones whose UTC offset changed during the run: {}\n", fmt::join(dst_zones, ", "));
  fmt::print("most parked at once {}, most in memory {}; simulated 48 h in {:.1f} s\n", r.max_parked,
             r.max_in_memory, run_s);
  std::size_t rows = 0;
  for (const auto& [status, n] : r.rows) rows += n;
  const bool ok = inside == 0 && static_cast<double>(max_s) <= rate + burst && rows == r.sends.size() &&
                  r.sends.size() + r.waiting_at_end == r.offered;
  fmt::print("{}\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
