#include "provider_model.h"

#include <algorithm>

namespace pacer::sim {
namespace {

AdaptiveRateOptions adaptiveFor(const ProviderScenario& p) {
  AdaptiveRateOptions o;  // pacerd's defaults (docs/configuration.md, adaptive.*)
  o.ceiling = p.rate.value_or(0);
  o.floor = std::min(o.floor, o.ceiling);
  return o;
}

}  // namespace

ProviderModel::ProviderModel(const ProviderScenario& p, MonoTime now)
    : p_(p), rng_(p.seed), adaptive_(adaptiveFor(p), now), judges_(std::max<std::uint32_t>(1, p.workers),
                                                                    ThrottleJudge(ThrottleJudgeOptions{}, now)) {}

std::uint64_t ProviderModel::capacityVerdicts() const {
  std::uint64_t n = 0;
  for (const ThrottleJudge& j : judges_) n += j.capacityVerdicts();
  return n;
}

std::uint64_t ProviderModel::noiseVerdicts() const {
  std::uint64_t n = 0;
  for (const ThrottleJudge& j : judges_) n += j.noiseVerdicts();
  return n;
}

ProviderModel::Answer ProviderModel::send(MonoTime now) {
  while (!window_.empty() && now - window_.front() >= std::chrono::seconds(1)) window_.pop_front();
  const double x = u_(rng_);
  Answer a = Answer::kAccepted;
  if (x < p_.throttle_noise)
    a = Answer::kThrottled;
  else if (x < p_.throttle_noise + p_.fault_noise)
    a = Answer::kFault;
  else if (p_.capacity && static_cast<double>(window_.size()) >= *p_.capacity)
    a = Answer::kThrottled;
  if (a == Answer::kAccepted) window_.push_back(now);
  control(now, a);
  return a;
}

void ProviderModel::control(MonoTime now, Answer a) {
  const bool throttled = a == Answer::kThrottled;
  const Nanos retry{static_cast<std::int64_t>(p_.retry_s * 1e9)};
  switch (p_.controller) {
    case ProviderController::kFixed: return;
    case ProviderController::kPerThrottle:
      if (!throttled) return;
      adaptive_.onThrottled(now, retry);
      paused_until_ = std::max(paused_until_, now + retry);
      return;
    case ProviderController::kJudged: {
      ThrottleJudge& judge = judges_[next_judge_++ % judges_.size()];
      const ThrottleVerdict v = judge.answer(now, throttled);
      if (v.kind == ThrottleVerdict::Kind::kCapacity) adaptive_.onCapacity(now, v.pause, v.keep);
      if (v.kind == ThrottleVerdict::Kind::kNoise || v.kind == ThrottleVerdict::Kind::kRaise)
        adaptive_.restoreLimit(now, v.keep);
      return;
    }
  }
}

RateLimit ProviderModel::limit(MonoTime now) {
  const RateLimit ceiling{p_.rate.value_or(0), p_.burst};
  if (p_.controller == ProviderController::kFixed) return ceiling;
  return limitAtRate(ceiling, adaptive_.rate(now));
}

double ProviderModel::wouldAccept() const {
  const double offered = p_.rate.value_or(0) * (1 - p_.throttle_noise - p_.fault_noise);
  return p_.capacity ? std::min(offered, *p_.capacity) : offered;
}

}  // namespace pacer::sim
