#include <cmath>

#include "pacer/rate_limiter.h"
#include "fixed_window.h"
#include "leaky_bucket.h"
#include "sliding_log.h"
#include "sliding_window.h"
#include "token_bucket.h"

namespace pacer {
namespace {
constexpr double kMaxRate = 1e7;

bool usesWindow(Algorithm a) {
  return a == Algorithm::kFixedWindow || a == Algorithm::kSlidingLog || a == Algorithm::kSlidingWindow;
}
}  // namespace

std::string_view algorithmName(Algorithm a) noexcept {
  switch (a) {
    case Algorithm::kTokenBucket: return "token_bucket";
    case Algorithm::kLeakyBucket: return "leaky_bucket";
    case Algorithm::kFixedWindow: return "fixed_window";
    case Algorithm::kSlidingLog: return "sliding_log";
    case Algorithm::kSlidingWindow: return "sliding_window";
  }
  return "unknown";
}

bool parseAlgorithm(std::string_view name, Algorithm& out) noexcept {
  for (Algorithm a : {Algorithm::kTokenBucket, Algorithm::kLeakyBucket, Algorithm::kFixedWindow, Algorithm::kSlidingLog,
                      Algorithm::kSlidingWindow}) {
    if (algorithmName(a) == name) {
      out = a;
      return true;
    }
  }
  return false;
}

void validateLimit(const RateLimit& limit, const LimiterOptions& options) {
  if (!std::isfinite(limit.rate_per_s) || limit.rate_per_s < 0.0) {
    throw InvalidLimitError("rate must be a finite number >= 0 (messages per second)");
  }
  if (limit.rate_per_s > kMaxRate) throw InvalidLimitError("rate must be at most 10000000 messages per second");
  if (!std::isfinite(limit.burst) || limit.burst < 1.0) {
    throw InvalidLimitError("burst must be a finite number >= 1 (messages)");
  }
  if (usesWindow(options.algorithm) && options.window.count() <= 0) {
    throw InvalidLimitError("window must be longer than 0");
  }
  if (options.algorithm == Algorithm::kLeakyBucket && options.max_lateness.count() < 0) {
    throw InvalidLimitError("max_lateness must not be negative");
  }
  if ((options.algorithm == Algorithm::kSlidingLog || options.algorithm == Algorithm::kSlidingWindow) &&
      limit.rate_per_s > 0.0 && limit.rate_per_s * static_cast<double>(options.window.count()) / 1e9 < 1.0) {
    throw InvalidLimitError(
        "sliding_log and sliding_window count whole messages per window: rate x window must be >= 1");
  }
  if (options.algorithm == Algorithm::kSlidingLog) {
    const double units = limit.rate_per_s * static_cast<double>(options.window.count()) / 1e9;
    if (units > static_cast<double>(options.max_log_entries)) {
      throw InvalidLimitError("sliding_log would keep more than max_log_entries timestamps: lower rate*window");
    }
  }
}

RateLimitingInterfacePtr makeLimiter(const LimiterOptions& options, RateLimit limit, MonoTime now) {
  validateLimit(limit, options);
  using namespace ratelimit;
  switch (options.algorithm) {
    case Algorithm::kTokenBucket: return std::make_unique<TokenBucket>(limit, now);
    case Algorithm::kLeakyBucket: return std::make_unique<LeakyBucket>(limit, options.max_lateness, now);
    case Algorithm::kFixedWindow: return std::make_unique<FixedWindow>(limit, options.window, now);
    case Algorithm::kSlidingLog:
      return std::make_unique<SlidingLog>(limit, options.window, options.max_log_entries, now);
    case Algorithm::kSlidingWindow: return std::make_unique<SlidingWindow>(limit, options.window, now);
  }
  throw InvalidLimitError("unknown algorithm");
}

}  // namespace pacer
