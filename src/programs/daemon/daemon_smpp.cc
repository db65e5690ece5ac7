// pacerd's SMPP sinks watched: their session figures for /metrics and the
// warning when the window, not the quota, sets their pace. An SMSC answers
// each submit_sm after some latency, and a bind holds at most `window`
// unanswered, so a worker sends at most window x binds / latency segments
// per second whatever the provider's rate allows (docs/smpp.md "Window and
// latency").
#include <fmt/format.h>

#include <cmath>
#include <set>

#include "daemon_parts.h"

namespace pacer::worker {
namespace {

constexpr std::chrono::seconds kCheckEvery{1};
constexpr std::chrono::seconds kRepeatEvery{60};  // a warning repeats this often while it holds
// The window's capacity this many times the worker's share, or the window
// sets the pace: measured end to end at 100 ms (4 workers, bench/RESULTS-smpp.md,
// "Window headroom"), about 70% of the quota at 1x, 73-89% at 1.5-2x, and
// the level of an SMSC answering at once (93%) only from about 3x. Tokens
// fall due at the provider's pace across workers, in clumps: a window that
// only carries the average falls behind in each clump.
constexpr double kHeadroom = 2.5;

// This worker's share of the rates `sink` carries (segments/s): its
// provider's, or for the default sink every provider's without a sink of
// its own. nullopt when none of them has a rate (unlimited: no window is enough to judge).
std::optional<double> shareOf(const SmppSinkRef& sink, const std::set<std::string>& own,
                              const std::vector<ProviderStats>& providers) {
  std::optional<double> share;
  for (const ProviderStats& p : providers) {
    const bool carried = sink.provider.empty() ? !own.count(p.id) : p.id == sink.provider;
    if (!carried || !p.ceiling) continue;
    share = share.value_or(0) + *p.ceiling / std::max<std::uint32_t>(1, p.workers);
  }
  return share;
}

}  // namespace

SmppWatch::SmppWatch(std::vector<SmppSinkRef> sinks, logging::LoggerPtr log)
    : sinks_(std::move(sinks)), log_(std::move(log)), warned_at_(sinks_.size()), health_(sinks_.size()) {
  for (const SmppSinkRef& s : sinks_)
    log_->info("event=smpp_window sink={} window={} binds={} max_rate_at_50ms={:.0f} at_100ms={:.0f} at_200ms={:.0f}",
               s.where, s.window, s.binds, sink::smppWindowCapacity(s.window, s.binds, 50),
               sink::smppWindowCapacity(s.window, s.binds, 100), sink::smppWindowCapacity(s.window, s.binds, 200));
}

std::vector<admin::SmppSinkMetrics> SmppWatch::metrics() const {
  std::vector<admin::SmppSinkMetrics> out;
  out.reserve(sinks_.size());
  for (const SmppSinkRef& s : sinks_)
    out.push_back(admin::SmppSinkMetrics{s.where, s.sink->stats(), s.window, s.binds});
  return out;
}

void SmppWatch::check(MonoTime now, const std::vector<ProviderStats>& providers) {
  if (sinks_.empty() || now < next_check_) return;
  next_check_ = now + kCheckEvery;
  std::set<std::string> own;
  for (const SmppSinkRef& s : sinks_)
    if (!s.provider.empty()) own.insert(s.provider);
  for (std::size_t i = 0; i < sinks_.size(); ++i) {
    const SmppSinkRef& s = sinks_[i];
    const sink::SmppSinkStats st = s.sink->stats();
    const std::optional<double> share = shareOf(s, own, providers);
    const double capacity = sink::smppWindowCapacity(s.window, s.binds, st.submit_latency_ms);
    if (!share || st.binds_up == 0 || capacity >= kHeadroom * *share) {
      warned_at_[i] = {};
      continue;
    }
    if (warned_at_[i] != MonoTime{} && now - warned_at_[i] < kRepeatEvery) continue;
    warned_at_[i] = now;
    const auto needed =
        static_cast<long>(std::ceil(kHeadroom * *share * st.submit_latency_ms / 1000.0 / double(s.binds)));
    log_->warn(
        "event=smpp_window_limits sink={} rate={:.1f} window={} binds={} latency_ms={:.1f} capacity={:.1f} "
        "hint=\"window x binds / latency carries less than {} times this worker's share of the provider's rate, "
        "so the window sets its pace; raise sink.smpp.window to {} or add binds, within what the SMSC allows\"",
        s.where, *share, s.window, s.binds, st.submit_latency_ms, capacity, kHeadroom, needed);
  }
}

void SmppWatch::health(MonoTime now, WorkerCore& core) {
  for (std::size_t i = 0; i < sinks_.size(); ++i) {
    const SmppSinkRef& s = sinks_[i];
    if (s.provider.empty()) continue;  // the default sink serves no one provider
    const sink::SmppSinkStats st = s.sink->stats();
    Health& h = health_[i];
    const std::uint64_t failures = st.bind_failures + st.disconnects;
    std::string down;
    if (st.binds_up > 0) {
      h.failures_up = failures;
      h.bind_failures_up = st.bind_failures;
    } else if (failures > h.failures_up) {
      down = st.bind_failures > h.bind_failures_up
                 ? fmt::format("binds failing ({} refused or unanswered)", st.bind_failures - h.bind_failures_up)
                 : std::string("no bound session");
    }
    if (down == h.down) continue;
    if (down.empty())
      log_->info("event=provider_up provider={} sink={} binds_up={}", s.provider, s.where, st.binds_up);
    else
      log_->warn("event=provider_down provider={} sink={} reason=\"{}\"", s.provider, s.where, down);
    h.down = down;
    core.setProviderDown(s.provider, down.empty() ? std::nullopt : std::optional<std::string>(down), now);
  }
}

}  // namespace pacer::worker
