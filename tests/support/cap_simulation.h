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

// Drives `store` for opts.duration from `start` and returns what the brute
// force found. Query mix: a few hot recipients get most traffic, so caps bite.
inline CapSimReport runCapSimulation(FrequencyCapStore& store, const CapSimOptions& opts, WallTime start) {
  using Key = std::pair<int, std::size_t>;  // recipient, rule
  CapSimReport rep;
  std::mt19937_64 rng(opts.seed);
  std::vector<std::string> names;
  for (int r = 0; r < opts.recipients; ++r) names.push_back("+4915" + std::to_string(100000000 + r * 7919));
  std::map<Key, std::vector<std::int64_t>> sent;  // every send that went out (sorted)
  std::discrete_distribution<int> hot({8, 2});    // 80% of queries to the hottest 2% of recipients
  std::uniform_int_distribution<int> hot_r(0, std::max(0, opts.recipients / 50 - 1));
  std::uniform_int_distribution<int> any_r(0, opts.recipients - 1);
  std::uniform_int_distribution<std::size_t> rule_d(0, opts.rules.size() - 1);
  std::uniform_int_distribution<int> batch_d(1, opts.max_batch);
  std::uniform_int_distribution<std::int64_t> step_d(1, std::chrono::milliseconds(opts.max_step).count());
  std::bernoulli_distribution fail_d(opts.release_probability);

  const auto bruteCount = [&](const std::vector<std::int64_t>& v, std::int64_t now, std::int64_t window) {
    return static_cast<std::uint32_t>(
        std::count_if(v.begin(), v.end(), [&](std::int64_t s) { return s > now - window; }));
  };
  std::vector<CapQuery> queries;
  std::vector<Key> keys;
  std::vector<CapDecision> out;
  std::vector<CapRelease> releases;
  std::vector<Key> release_keys;
  const WallTime end = start + opts.duration;
  for (WallTime now = start; now < end; now += std::chrono::milliseconds(step_d(rng))) {
    const std::int64_t now_ms = now.time_since_epoch().count();
    const int n = batch_d(rng);
    queries.clear();
    keys.clear();
    for (int i = 0; i < n; ++i) {
      const int r = hot(rng) == 0 ? hot_r(rng) : any_r(rng);
      const std::size_t k = rule_d(rng);
      keys.emplace_back(r, k);
      const CapRule& rule = opts.rules[k];
      queries.push_back(CapQuery{names[static_cast<std::size_t>(r)], rule.scope, rule.limit, rule.window});
    }
    out.assign(queries.size(), CapDecision{});
    store.decide(queries, now, out);
    ++rep.batches;
    releases.clear();
    release_keys.clear();
    for (std::size_t i = 0; i < queries.size(); ++i) {
      const CapRule& rule = opts.rules[keys[i].second];
      std::vector<std::int64_t>& v = sent[keys[i]];
      const std::int64_t w = rule.window.count();
      const std::uint32_t before = bruteCount(v, now_ms, w);
      ++rep.decisions;
      if (out[i].verdict == CapVerdict::kAllowed) {
        ++rep.allowed;
        if (before >= rule.limit) ++rep.wrong_verdicts;
        v.insert(std::upper_bound(v.begin(), v.end(), now_ms), now_ms);
        if (fail_d(rng)) {
          releases.push_back(CapRelease{queries[i].recipient, queries[i].scope, out[i].at});
          release_keys.push_back(keys[i]);
        }
      } else if (out[i].verdict == CapVerdict::kCapped) {
        ++rep.capped;
        if (before < rule.limit) {
          ++rep.wrong_verdicts;
        } else {
          // Allowed again when the limit-th newest live send leaves the window.
          std::vector<std::int64_t> live;
          for (const std::int64_t s : v)
            if (s > now_ms - w) live.push_back(s);
          const std::int64_t expect = live[live.size() - rule.limit] + w;
          if (out[i].at.time_since_epoch().count() != expect) ++rep.wrong_allowed_at;
        }
      } else {
        ++rep.unavailable;
      }
    }
    if (!releases.empty()) {
      // The message failed for good: it never went out.
      const CapBatchResult r = store.release(releases, now);
      ++rep.release_batches;
      rep.release_requests += releases.size();
      rep.released += r.decided;
      for (std::size_t i = 0; i < releases.size(); ++i) {
        std::vector<std::int64_t>& v = sent[release_keys[i]];
        const auto it = std::find(v.begin(), v.end(), releases[i].counted_at.time_since_epoch().count());
        if (it != v.end()) v.erase(it);
      }
    }
  }
  // Every rolling window of every pair: limit+1 sends within less than a window is over.
  std::vector<char> over(static_cast<std::size_t>(opts.recipients), 0);
  for (const auto& [key, v] : sent) {
    if (v.empty()) continue;
    ++rep.pairs_used;
    const CapRule& rule = opts.rules[key.second];
    bool bad = false;
    for (std::size_t i = 0; i + rule.limit < v.size(); ++i) bad = bad || v[i + rule.limit] - v[i] < rule.window.count();
    if (bad) {
      ++rep.pairs_over_cap;
      over[static_cast<std::size_t>(key.first)] = 1;
    }
  }
  rep.recipients_over_cap = static_cast<std::uint64_t>(std::count(over.begin(), over.end(), 1));
  return rep;
}

}  // namespace pacer::testing
