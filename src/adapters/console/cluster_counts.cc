#include "pacer/console/cluster_counts.h"

#include <condition_variable>
#include <mutex>
#include <thread>

#include "console_redis.h"
#include "pacer/console/console_model.h"

namespace pacer::console {
namespace {

// This worker's own counters since it started, as the cluster's fields.
CountFields countersOf(const admin::MetricsSnapshot& s) {
  CountFields out;
  for (const admin::ProviderMetrics& p : s.providers) {
    out[countField("provider_throttled", p.id)] = p.throttled;
    out[countField("provider_server_errors", p.id)] = p.server_errors;
  }
  for (const admin::CampaignMetrics& c : s.campaigns) out[countField("campaign_retries", c.id)] = c.retries;
  return out;
}

}  // namespace

struct ClusterCountsPublisher::Impl {
  Impl(ClusterCountsOptions o, const admin::AdminState& s)
      : options(std::move(o)), state(s), redis(options.redis, options.redis_timeout, options.key_prefix) {}

  const ClusterCountsOptions options;
  const admin::AdminState& state;
  std::mutex mutex;  // stop; and one write at a time (the thread's or finish()'s)
  std::condition_variable wake;
  bool stop = false;
  ProviderStateReader redis;
  CountDeltas deltas;
  bool failing = false;
  std::thread thread;

  void log(const char* level, const std::string& text) const {
    if (!options.log) return;
    try {
      options.log(level, text);
    } catch (...) {
    }
  }

  // Under `mutex`.
  bool write() {
    const auto snapshot = state.snapshot();
    if (!snapshot) return true;
    const CountFields now = countersOf(*snapshot);
    try {
      redis.addCounts(deltas.pending(now));
      deltas.acknowledge(now);
      if (failing) log("INFO", "event=cluster_counts_restored");
      failing = false;
      return true;
    } catch (const ProviderStateError& e) {
      if (!failing) log("WARN", std::string("event=cluster_counts_unavailable error=\"") + e.what() + "\"");
      failing = true;
      return false;
    }
  }

  void loop() {
    std::unique_lock<std::mutex> lock(mutex);
    while (!stop) {
      wake.wait_for(lock, options.interval, [&] { return stop; });
      if (stop) break;
      write();
    }
  }
};

ClusterCountsPublisher::ClusterCountsPublisher(ClusterCountsOptions options, const admin::AdminState& state)
    : impl_(std::make_unique<Impl>(std::move(options), state)) {
  impl_->thread = std::thread([this] { impl_->loop(); });
}

ClusterCountsPublisher::~ClusterCountsPublisher() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stop = true;
  }
  impl_->wake.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
}

bool ClusterCountsPublisher::finish() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stop = true;
  }
  impl_->wake.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->write();
}

}  // namespace pacer::console
