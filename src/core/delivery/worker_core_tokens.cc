// WorkerCore's dead-token guard (worker_core_impl.h, pacer/dead_token_guard.h):
// while the share of a provider's answers that call a token dead is
// abnormal, no token is recorded as dead and the provider pauses.
#include <fmt/format.h>

#include "worker_core_impl.h"

namespace pacer {

bool WorkerCore::Impl::deadTokenHeld(Provider* p, const SendResult& r, MonoTime now) {
  // Throttles and faults say nothing about the token; every final answer does.
  if (r.outcome == SendOutcome::kThrottled || r.outcome == SendOutcome::kFault) return false;
  if (!options.dead_token_guard.enabled) return false;
  if (!p->dead_tokens) p->dead_tokens.emplace(options.dead_token_guard);
  if (!p->dead_tokens->record(r.outcome == SendOutcome::kInvalidToken, now)) return false;
  // This worker's campaigns of the provider wait; the next verdict held after
  // the pause pauses it again, so a wrong configuration sends little.
  p->paused_until = std::max(p->paused_until, now + options.dead_token_guard.pause);
  return true;
}

std::string WorkerCore::Impl::heldTokenReason(const Provider* p, const SendResult& r, MonoTime now) const {
  const DeadTokenGuard& g = *p->dead_tokens;
  try {
    return fmt::format(
        "dead-token guard held: {}; {:.0f}% of {} answers in {} s called the token dead "
        "(threshold {:.0f}%), so no token is marked dead",
        r.reason.empty() ? "invalid token" : r.reason, 100.0 * g.ratio(now), g.answers(now),
        std::chrono::duration_cast<std::chrono::seconds>(g.options().window).count(), 100.0 * g.options().threshold);
  } catch (...) {  // out of memory formatting: still say why
    return "dead-token guard held";
  }
}

}  // namespace pacer
