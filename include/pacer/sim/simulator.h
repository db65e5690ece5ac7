// Runs the real scheduler and limiters over a scenario on simulated time.
// Pure: no clock reads; the caller times the run if it wants to. The only
// I/O is the independent quiet-hours check, which sets TZ and has glibc read
// the tz database (so: one simulation at a time, from one thread).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pacer/sim/scenario.h"

namespace pacer::sim {

// Arrival-to-send waits of a campaign with arrival_per_s, in simulated ms
// (nearest rank, to 0.1 ms): message n arrives at start_s + n / arrival_per_s
// and is offered to the scheduler at the first tick at or after that, so
// even an unhindered message waits up to a tick.
struct WaitStats {
  std::uint64_t count = 0;  // messages sent that had arrived
  double p50_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
};

// What a campaign's recipient rules did (campaigns only).
struct RuleResult {
  std::string priority_class;
  std::optional<WaitStats> waits;  // campaigns with arrival_per_s
  bool capped = false;             // has a frequency cap
  std::uint64_t suppressed = 0;    // refused by the cap and dropped (cap_policy suppress)
  std::uint64_t deferred = 0;      // times the cap sent a message back to wait (cap_policy defer)
  std::uint64_t recipients_over_cap = 0;  // independent count: recipients with more than the cap in a window
  bool quiet = false;                     // has quiet hours
  std::uint64_t quiet_held = 0;           // messages that waited for quiet hours (each once)
  std::uint64_t sent_in_quiet_window = 0;  // independent check (glibc localtime_r) of every send
  std::uint64_t waiting = 0;               // still held (quiet hours or cap) when the run ended
  std::optional<double> lifetime_s;        // has a lifetime (ttl_s, message_ttl_s)
  std::uint64_t expired = 0;               // past their deadline before they could be sent: never sent, no token
};

struct SeriesResult {
  std::string id;
  std::optional<double> rate;
  double burst = 1;
  std::uint64_t sent = 0;
  std::optional<double> finished_s;  // when the last message went (finite campaigns)
  std::vector<std::uint64_t> per_s;  // sends in each simulated second
  std::vector<std::uint64_t> bins;   // sends in each tick (only when asked for)
  RuleResult rules;                  // campaigns only
  // A modelled provider (ProviderScenario::modelled): `sent` and `per_s`
  // count what it accepted, and this what it refused and what the
  // controller did. Its campaigns' `sent` count accepted messages too.
  struct Answers {
    double would_accept = 0;  // per second at most: min(rate x (1 - noise), capacity)
    std::uint64_t attempts = 0, throttled = 0, faults = 0;
    std::vector<std::uint64_t> throttled_per_s;
    std::vector<double> effective_per_s;  // the controller's rate at the end of each second
    std::uint64_t capacity_cuts = 0, noise_verdicts = 0;
    double noise = 0;  // the judge's noise level at the end
  };
  std::optional<Answers> answers;
  // A campaign with a failover list: what each of its providers carried
  // (accepted), in the list's order; empty otherwise.
  std::vector<std::pair<std::string, std::uint64_t>> by_provider;
};

struct SimResult {
  double tick_ms = 0;
  std::uint64_t ticks = 0;
  std::vector<SeriesResult> campaigns;  // in scenario order
  std::vector<SeriesResult> providers;
};

// Throws ScenarioError (naming the fields) when the result would need more
// than about 4 GiB, or when the scheduler refuses a campaign or provider.
SimResult simulate(const Scenario& scenario, bool keep_bins);

}  // namespace pacer::sim
