// A multi-day run of random frequency-cap traffic against any
// FrequencyCapStore on simulated wall-clock time, checked by an independent
// brute-force count (it keeps every send that went out, and never asks the
// store). Used by the unit test (in-memory store) and the integration test
// (Redis). Header-only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "pacer/frequency_cap.h"

namespace pacer::testing {

struct CapRule {
  std::string scope;
  std::uint32_t limit;
  std::chrono::milliseconds window;
};

struct CapSimOptions {
  int recipients = 2000;
  std::chrono::hours duration{72};
  std::uint64_t seed = 1;
  int max_batch = 200;                // queries per batch: 1..max_batch
  std::chrono::minutes max_step{30};  // time between batches: 1 ms..max_step
  double release_probability = 0.05;  // an allowed send that fails for good
  std::vector<CapRule> rules = {{"class:bulk", 3, std::chrono::hours(24)},
                                {"campaign:flash", 1, std::chrono::hours(6)},
                                {"class:transactional", 10, std::chrono::hours(1)}};
};

struct CapSimReport {
  std::uint64_t batches = 0;
  std::uint64_t decisions = 0;
  std::uint64_t allowed = 0;
  std::uint64_t capped = 0;
  std::uint64_t release_batches = 0;  // release() calls
  std::uint64_t release_requests = 0;
  std::uint64_t released = 0;          // as the store counted them
  std::uint64_t unavailable = 0;       // must stay 0 on a healthy store
  std::uint64_t wrong_verdicts = 0;    // allowed/capped differs from the brute-force count
  std::uint64_t wrong_allowed_at = 0;  // capped with an instant other than the brute-force one
  std::uint64_t pairs_over_cap = 0;    // (recipient, scope) with more than `limit` sends in some window
  std::uint64_t recipients_over_cap = 0;
  std::uint64_t pairs_used = 0;
};

// Drives a store for opts.duration from `start` and keeps the brute-force
// record. Query mix: 80% of queries go to the hottest 2% of recipients, so
// caps bite.
class CapSimulation {
 public:
  CapSimulation(FrequencyCapStore& store, const CapSimOptions& opts)
      : store_(store),
        opts_(opts),
        rng_(opts.seed),
        hot_r_(0, std::max(0, opts.recipients / 50 - 1)),
        any_r_(0, opts.recipients - 1),
        rule_d_(0, opts.rules.size() - 1),
        batch_d_(1, opts.max_batch),
        step_d_(1, std::chrono::milliseconds(opts.max_step).count()),
        fail_d_(opts.release_probability) {
    for (int r = 0; r < opts.recipients; ++r) names_.push_back("+4915" + std::to_string(100000000 + r * 7919));
  }

  CapSimReport run(WallTime start) {
    const WallTime end = start + opts_.duration;
    for (WallTime now = start; now < end; now += std::chrono::milliseconds(step_d_(rng_))) {
      makeBatch();
      out_.assign(queries_.size(), CapDecision{});
      store_.decide(queries_, now, out_);
      ++rep_.batches;
      checkBatch(now.time_since_epoch().count());
      releaseFailed(now);
    }
    countOverCap();
    return rep_;
  }

 private:
  using Key = std::pair<int, std::size_t>;  // recipient, rule

  void makeBatch() {
    queries_.clear();
    keys_.clear();
    for (int i = batch_d_(rng_); i > 0; --i) {
      const int r = hot_(rng_) == 0 ? hot_r_(rng_) : any_r_(rng_);
      const std::size_t k = rule_d_(rng_);
      keys_.emplace_back(r, k);
      const CapRule& rule = opts_.rules[k];
      queries_.push_back(CapQuery{names_[static_cast<std::size_t>(r)], rule.scope, rule.limit, rule.window});
    }
  }

  // Each answer against the sends recorded so far, in batch order.
  void checkBatch(std::int64_t now_ms) {
    releases_.clear();
    release_keys_.clear();
    for (std::size_t i = 0; i < queries_.size(); ++i) {
      const CapRule& rule = opts_.rules[keys_[i].second];
      std::vector<std::int64_t>& v = sent_[keys_[i]];
      const std::int64_t w = rule.window.count();
      std::vector<std::int64_t> live;
      for (const std::int64_t s : v)
        if (s > now_ms - w) live.push_back(s);
      ++rep_.decisions;
      if (out_[i].verdict == CapVerdict::kAllowed) {
        ++rep_.allowed;
        if (live.size() >= rule.limit) ++rep_.wrong_verdicts;
        v.insert(std::upper_bound(v.begin(), v.end(), now_ms), now_ms);
        if (fail_d_(rng_)) {
          releases_.push_back(CapRelease{queries_[i].recipient, queries_[i].scope, out_[i].at});
          release_keys_.push_back(keys_[i]);
        }
      } else if (out_[i].verdict == CapVerdict::kCapped) {
        ++rep_.capped;
        if (live.size() < rule.limit) {
          ++rep_.wrong_verdicts;
        } else if (out_[i].at.time_since_epoch().count() != live[live.size() - rule.limit] + w) {
          // Allowed again when the limit-th newest live send leaves the window.
          ++rep_.wrong_allowed_at;
        }
      } else {
        ++rep_.unavailable;
      }
    }
  }

  // Those messages failed for good: they never went out.
  void releaseFailed(WallTime now) {
    if (releases_.empty()) return;
    const CapBatchResult r = store_.release(releases_, now);
    ++rep_.release_batches;
    rep_.release_requests += releases_.size();
    rep_.released += r.decided;
    for (std::size_t i = 0; i < releases_.size(); ++i) {
      std::vector<std::int64_t>& v = sent_[release_keys_[i]];
      const auto it = std::find(v.begin(), v.end(), releases_[i].counted_at.time_since_epoch().count());
      if (it != v.end()) v.erase(it);
    }
  }

  // Every rolling window of every pair: limit+1 sends within less than a
  // window is over the cap.
  void countOverCap() {
    std::vector<char> over(static_cast<std::size_t>(opts_.recipients), 0);
    for (const auto& [key, v] : sent_) {
      if (v.empty()) continue;
      ++rep_.pairs_used;
      const CapRule& rule = opts_.rules[key.second];
      bool bad = false;
      for (std::size_t i = 0; i + rule.limit < v.size(); ++i)
        bad = bad || v[i + rule.limit] - v[i] < rule.window.count();
      if (!bad) continue;
      ++rep_.pairs_over_cap;
      over[static_cast<std::size_t>(key.first)] = 1;
    }
    rep_.recipients_over_cap = static_cast<std::uint64_t>(std::count(over.begin(), over.end(), 1));
  }

  FrequencyCapStore& store_;
  const CapSimOptions& opts_;
  CapSimReport rep_;
  std::mt19937_64 rng_;
  std::vector<std::string> names_;
  std::map<Key, std::vector<std::int64_t>> sent_;  // every send that went out (sorted)
  std::discrete_distribution<int> hot_{8, 2};
  std::uniform_int_distribution<int> hot_r_;
  std::uniform_int_distribution<int> any_r_;
  std::uniform_int_distribution<std::size_t> rule_d_;
  std::uniform_int_distribution<int> batch_d_;
  std::uniform_int_distribution<std::int64_t> step_d_;
  std::bernoulli_distribution fail_d_;
  std::vector<CapQuery> queries_;
  std::vector<Key> keys_;
  std::vector<CapDecision> out_;
  std::vector<CapRelease> releases_;
  std::vector<Key> release_keys_;
};

inline CapSimReport runCapSimulation(FrequencyCapStore& store, const CapSimOptions& opts, WallTime start) {
  return CapSimulation(store, opts).run(start);
}

}  // namespace pacer::testing
