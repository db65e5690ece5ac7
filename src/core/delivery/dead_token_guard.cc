#include "pacer/dead_token_guard.h"

#include <algorithm>

namespace pacer {

DeadTokenGuard::DeadTokenGuard(DeadTokenGuardOptions options) noexcept
    : options_(options), width_(std::max<Nanos>(Nanos{1}, options.window / static_cast<std::int64_t>(kBuckets))) {}

std::int64_t DeadTokenGuard::advance(MonoTime now) noexcept {
  const std::int64_t at = std::max<std::int64_t>(0, now.time_since_epoch().count() / width_.count());
  const std::int64_t slot = std::max(at, last_slot_);
  if (slot == last_slot_) return slot;
  for (Bucket& b : buckets_) {
    if (b.slot < 0 || b.slot > slot - static_cast<std::int64_t>(kBuckets)) continue;
    answers_ -= b.answers;
    dead_ -= b.dead;
    b = Bucket{};
  }
  last_slot_ = slot;
  return slot;
}

bool DeadTokenGuard::judged() const noexcept {
  const double min = static_cast<double>(options_.min_answers);
  return answers_ >= options_.min_answers || static_cast<double>(dead_) >= options_.threshold * min;
}

bool DeadTokenGuard::over() const noexcept {
  return answers_ > 0 && static_cast<double>(dead_) > options_.threshold * static_cast<double>(answers_);
}

bool DeadTokenGuard::record(bool dead, MonoTime now) noexcept {
  if (!options_.enabled) return false;
  const std::int64_t slot = advance(now);
  Bucket& b = buckets_[static_cast<std::size_t>(slot) % kBuckets];
  b.slot = slot;
  ++b.answers;
  ++answers_;
  if (dead) {
    ++b.dead;
    ++dead_;
  }
  const bool judge = judged();
  if (!holding_ && judge && over()) {
    holding_ = true;
    ++trips_;
  } else if (holding_ && judge && !over()) {
    holding_ = false;
  }
  if (!holding_ || !dead) return false;
  ++held_;
  return true;
}

DeadTokenGuard::Counts DeadTokenGuard::countsAt(MonoTime now) const noexcept {
  const std::int64_t at = std::max<std::int64_t>(0, now.time_since_epoch().count() / width_.count());
  const std::int64_t slot = std::max(at, last_slot_);
  Counts c;
  for (const Bucket& b : buckets_) {
    if (b.slot < 0 || b.slot <= slot - static_cast<std::int64_t>(kBuckets)) continue;
    c.answers += b.answers;
    c.dead += b.dead;
  }
  return c;
}

double DeadTokenGuard::ratio(MonoTime now) const noexcept {
  const Counts c = countsAt(now);
  return c.answers == 0 ? 0.0 : static_cast<double>(c.dead) / static_cast<double>(c.answers);
}

std::uint64_t DeadTokenGuard::answers(MonoTime now) const noexcept { return countsAt(now).answers; }

}  // namespace pacer
