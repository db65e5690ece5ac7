// A guard against marking a whole audience dead, pure.
//
// A push provider that calls a token dead (APNs 410 / BadDeviceToken /
// DeviceTokenNotForTopic, FCM UNREGISTERED) makes Pacer record it for pruning
// (`pacerctl tokens export`). A few percent of dead tokens is normal; a
// configuration mistake (a wrong apns-topic, sandbox tokens sent to
// production) makes nearly every answer say "dead", and every token of the
// audience would be exported. The guard watches, per provider, the share of
// final answers (delivered, refused, dead; not throttles nor faults) that
// would mark a token dead, over a sliding time window. While that share is
// above `threshold`, the guard *holds*: the caller records no token as dead
// (the message fails with a reason saying the guard held it) and pauses the
// provider.
//
// It judges a window holding at least `min_answers` answers, or sooner once
// the dead answers alone reach threshold * min_answers (an audience that is
// all dead trips it at the 17th answer with the defaults, not the 50th).
// Once holding, it lets go only when a judged window is at or below the
// threshold again: a window emptied by the pause keeps it holding.
//
// The window is kBuckets buckets of window / kBuckets each: an answer counts
// for between (kBuckets - 1) / kBuckets of the window and the whole of it.
// Time going backwards counts in the latest bucket. No allocation after
// construction. Not thread-safe.
#pragma once

#include <array>
#include <cstdint>

#include "pacer/time.h"

namespace pacer {

struct DeadTokenGuardOptions {
  bool enabled = true;
  double threshold = 0.33;                  // share of answers marking a token dead above which it holds, in (0, 1]
  Nanos window = std::chrono::seconds(60);  // how far back answers count; > 0
  std::uint32_t min_answers = 50;           // answers in the window before it judges; >= 1
  Nanos pause = std::chrono::seconds(30);   // the provider pauses this long from each verdict held
};

class DeadTokenGuard {
 public:
  static constexpr std::size_t kBuckets = 60;

  explicit DeadTokenGuard(DeadTokenGuardOptions options) noexcept;
  // One final answer of the provider at `now`; `dead`: it would mark its
  // token dead. True when the guard holds after this answer and `dead`: the
  // caller must not record the token as dead.
  bool record(bool dead, MonoTime now) noexcept;
  // Holding now (as of the last record()).
  bool holding() const noexcept { return holding_; }
  // The dead share of the answers in the window at `now`; 0 with none.
  double ratio(MonoTime now) const noexcept;
  // Answers in the window at `now`.
  std::uint64_t answers(MonoTime now) const noexcept;
  std::uint64_t trips() const noexcept { return trips_; }  // times it started holding
  std::uint64_t held() const noexcept { return held_; }    // dead verdicts it held
  const DeadTokenGuardOptions& options() const noexcept { return options_; }

 private:
  struct Bucket {
    std::int64_t slot = -1;
    std::uint64_t answers = 0;
    std::uint64_t dead = 0;
  };
  struct Counts {
    std::uint64_t answers = 0, dead = 0;
  };
  Counts countsAt(MonoTime now) const noexcept;
  // Forgets the buckets that fell out of the window at `now`; returns the current slot.
  std::int64_t advance(MonoTime now) noexcept;
  bool judged() const noexcept;
  bool over() const noexcept;

  DeadTokenGuardOptions options_;
  Nanos width_;
  std::array<Bucket, kBuckets> buckets_{};
  std::int64_t last_slot_ = -1;
  std::uint64_t answers_ = 0, dead_ = 0;  // in the window
  bool holding_ = false;
  std::uint64_t trips_ = 0, held_ = 0;
};

}  // namespace pacer
