// WorkerCore's figures for logs, metrics and the console: the worker's, each
// campaign's and each provider's (include/pacer/worker.h).
#include "worker_core_impl.h"

namespace pacer {

WorkerStats WorkerCore::stats() const {
  WorkerStats s = impl_->totals;
  s.buffered_messages = impl_->bufferedMessages();
  s.buffered_bytes = impl_->buffered_bytes;
  s.unrecorded = impl_->unrecorded();
  s.pending_rows = impl_->to_ledger.rows();
  s.pending_receipts = impl_->to_ledger.pendingReceipts();
  if (impl_->to_ledger.rows() > 0) s.oldest_pending_row = impl_->to_ledger.since().value_or(impl_->now);
  s.store_failing = impl_->to_ledger.failing() || impl_->parking_failing;
  s.waiting = impl_->gate.waiting();
  if (impl_->leaser) s.quota = impl_->leaser->metrics();
  return s;
}

std::vector<ProviderStats> WorkerCore::providerStats(MonoTime now) const {
  std::vector<ProviderStats> out;
  for (const auto& [id, p] : impl_->providers) {
    ProviderStats s;
    s.id = id;
    if (p->info.limit) s.ceiling = p->info.limit->rate_per_s;
    s.paused = now < p->paused_until;
    if (p->adaptive) s.effective = p->adaptive->rate(now);
    if (impl_->leaser && p->qid != UINT32_MAX) {
      s.effective = impl_->leaser->effectiveRate(p->qid);
      s.paused = s.paused || now < impl_->leaser->pausedUntil(p->qid);
    }
    s.throttled = p->throttled;
    s.throttle_noise = p->judge->noise();
    s.capacity_cuts = p->capacity_cuts;
    s.noise_verdicts = p->noise_verdicts;
    s.last_verdict = p->last_verdict;
    s.circuit_open = p->breaker && p->breaker->isOpen(now);
    if (impl_->leaser && p->qid != UINT32_MAX) {
      s.degraded = impl_->leaser->degraded(p->qid);
      s.circuit_open = impl_->leaser->circuitOpen(p->qid);
      s.workers = impl_->leaser->workersFor(p->qid);
      if (!p->judging) s.throttle_noise = impl_->leaser->sharedNoise(p->qid);
    }
    s.server_errors = p->server_errors;
    s.recipient_throttled = p->recipient_throttled;
    if (p->dead_tokens) {
      s.dead_token_guard = p->dead_tokens->holding();
      s.dead_token_ratio = p->dead_tokens->ratio(now);
      s.dead_token_answers = p->dead_tokens->answers(now);
      s.dead_token_trips = p->dead_tokens->trips();
      s.dead_tokens_held = p->dead_tokens->held();
    }
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const ProviderStats& a, const ProviderStats& b) { return a.id < b.id; });
  return out;
}

namespace {

// A lane's figures added to its campaign's (prefix routes): one campaign to
// every reader.
void addLane(CampaignStats& into, const CampaignStats& lane) {
  for (auto [to, from] : {std::pair{&into.sent, lane.sent},
                          {&into.failed, lane.failed},
                          {&into.rejected, lane.rejected},
                          {&into.invalid_tokens, lane.invalid_tokens},
                          {&into.suppressed, lane.suppressed},
                          {&into.expired, lane.expired},
                          {&into.deferred, lane.deferred},
                          {&into.retries, lane.retries},
                          {&into.parked, lane.parked},
                          {&into.unparked, lane.unparked}})
    *to += from;
  for (auto [to, from] : {std::pair{&into.queued, lane.queued},
                          {&into.quiet_waiting, lane.quiet_waiting},
                          {&into.in_flight, lane.in_flight},
                          {&into.retrying, lane.retrying},
                          {&into.to_park, lane.to_park},
                          {&into.parked_waiting, lane.parked_waiting}})
    *to += from;
  if (lane.first_sent && (!into.first_sent || *lane.first_sent < *into.first_sent)) into.first_sent = lane.first_sent;
  if (lane.last_sent && (!into.last_sent || *lane.last_sent > *into.last_sent)) into.last_sent = lane.last_sent;
}

}  // namespace

// The default route (as `s` has it), then each lane routed to now: the
// prefixes naming its provider, the provider taking its traffic and why.
std::vector<RouteStatus> WorkerCore::Impl::routesOf(const Campaign& c, const CampaignStats& s) {
  std::vector<RouteStatus> out{RouteStatus{{}, c.info.provider, s.route, s.route_reason}};
  for (const Campaign::Lane& l : c.lanes) {
    if (!l.routed) continue;
    RouteStatus r{{}, l.provider, l.lane->provider ? l.lane->provider->info.id : l.provider, l.lane->route_reason};
    for (const PrefixRoute& p : c.info.routes)
      if (p.provider == l.provider) r.prefixes.push_back(p.prefix);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<CampaignStats> WorkerCore::campaignStats() const {
  std::vector<CampaignStats> out;
  std::vector<CampaignStats> lanes;
  for (const auto& [id, c] : impl_->campaigns) {
    CampaignStats s = c->stats;
    s.queued = c->queue.size() + c->rules.unchecked.size();
    s.quiet_waiting = c->rules.quiet_waiting;
    s.cap_waiting = c->rules.waiting.size() - std::min(c->rules.waiting.size(), c->rules.quiet_waiting);
    s.provider = c->info.provider;
    s.priority_class = c->info.priority_class;  // empty: the default class (shown as "default")
    s.limit = c->info.limit;
    s.in_flight = c->in_flight;
    s.retrying = c->retrying;
    s.to_park = c->to_park;
    s.parked_waiting = c->parked_waiting;
    s.route = c->provider ? c->provider->info.id : c->info.provider;
    s.route_reason = c->route_reason;
    if (c->whole_limit) s.limit = c->whole_limit;
    if (!c->parent) s.routes = Impl::routesOf(*c, s);
    (c->parent ? lanes : out).push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const CampaignStats& a, const CampaignStats& b) { return a.id < b.id; });
  for (const CampaignStats& lane : lanes) {
    auto it = std::lower_bound(out.begin(), out.end(), lane.id,
                               [](const CampaignStats& s, const std::string& id) { return s.id < id; });
    if (it != out.end() && it->id == lane.id) addLane(*it, lane);
  }
  return out;
}

}  // namespace pacer
