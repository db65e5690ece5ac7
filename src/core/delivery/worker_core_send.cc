// WorkerCore's queues, providers, dispatch to the sink and its answers (worker_core_impl.h).
#include "worker_core_impl.h"

#include <algorithm>
#include <cmath>

namespace pacer {

using delivery_detail::Item;

namespace {

// A change of the judged noise level smaller than this is not sent to the
// global quota (it moves a little with every quiet period).
constexpr double kNoiseReportStep = 0.002;
// A sink found full this recently still sets the pace (WorkerCore::Impl::dispatch).
constexpr Nanos kSinkBoundFor = std::chrono::seconds(1);

}  // namespace

void WorkerCore::Impl::enqueue(Campaign* c, Item item, bool at_front) {
  c = laneFor(c, item.msg);  // prefix routes: the lane of the provider that carries it
  buffered_bytes += item.bytes();
  queued_units += item.cost;
  c->queue.push(std::move(item), at_front);
  ++queued;
}

// A new message for `c`: queued, or parked when the campaign already has
// more in memory than it can send soon.
void WorkerCore::Impl::route(Campaign* c, Item item, MonoTime now) {
  // With prefix routes, what its lanes hold and can send soon counts too.
  std::size_t held = c->queue.size() + c->rules.unchecked.size();
  std::size_t can_send = keep(*c);
  for (const Campaign::Lane& l : c->lanes) {
    held += l.lane->queue.size();
    const std::size_t k = l.routed ? keep(*l.lane) : 0;
    can_send = k > SIZE_MAX - can_send ? SIZE_MAX : can_send + k;
  }
  if (parking && item.tracked && (c->parked_waiting > 0 || c->to_park > 0 || held >= can_send)) {
    item.not_before = WallTime{};
    toPark(c, std::move(item), now);
    return;
  }
  gate.toQueue(c, std::move(item));
}

Item WorkerCore::Impl::take(Campaign* c) {
  Item item = c->queue.take();
  --queued;
  queued_units -= item.cost;
  buffered_bytes -= item.bytes();
  return item;
}

void WorkerCore::Impl::failQueued(Campaign* c, const std::string& reason) {
  queued -= c->queue.removeIf([&](Item& item) {
    buffered_bytes -= item.bytes();
    queued_units -= item.cost;
    addRow(c, item, DeliveryStatus::kFailed, item.attempts, reason);
    return true;
  });
  gate.dropHeld(c, [&](Item& item) {
    addRow(c, item, DeliveryStatus::kFailed, item.attempts, reason);
    return true;
  });
}

void WorkerCore::Impl::applyPause(Campaign* c) {
  const bool want = c->held || c->info.state != CampaignState::kActive || (c->provider && c->provider->paused);
  if (want == c->sched_paused) return;
  if (want)
    scheduler.pause(c->sid);
  else
    scheduler.resume(c->sid);
  c->sched_paused = want;
}

void WorkerCore::Impl::providerPauses(MonoTime now) {
  for (auto& [id, p] : providers) {
    const bool paused = now < p->paused_until;
    if (paused != p->paused) {
      p->paused = paused;
      for (Campaign* c : p->campaigns) applyPause(c);
    }
    // Shared, this worker's answers a second go with every lease request, heard or not: one
    // that hears nothing (its binds lost, a provider that stopped answering it) would report
    // its last second heard for as long as it leases.
    if (leaser && p->qid != UINT32_MAX) {
      p->meter.pausedUntil(std::max(p->paused_until, leaser->pausedUntil(p->qid)));
      leaser->reportRates(p->qid, p->meter.last(now));
    }
    if (p->adaptive && p->info.limit) {
      const double r = p->adaptive->rate(now);
      if (std::abs(r - p->applied_rate) > 0.01 * p->applied_rate) {
        scheduler.setProviderLimit(p->sid, limitAtRate(*p->info.limit, r), now);
        p->applied_rate = r;
      }
    }
  }
}

WorkerCore::Impl::Provider* WorkerCore::Impl::provider(const std::string& id, MonoTime now) {
  if (id.empty()) return nullptr;
  auto it = providers.find(id);
  if (it != providers.end()) return it->second.get();
  // A campaign names a provider this worker has not loaded: unlimited until it is.
  ProviderInfo info;
  info.id = id;
  return addProvider(info, now);
}

// A name the quota takes as a key part and hash tag: no '{' or '}'.
std::string WorkerCore::Impl::quotaName(const std::string& id) {
  std::string out;
  out.reserve(id.size());
  for (char ch : id) {
    if (ch == '{')
      out += "%7B";
    else if (ch == '}')
      out += "%7D";
    else if (ch == '%')
      out += "%25";
    else
      out += ch;
  }
  return out;
}

// Registers a campaign with the scheduler: directly, or through the leaser
// (its limiter then spends global leases) when there is a global quota.
CampaignId WorkerCore::Impl::registerCampaign(const CampaignInfo& info, Provider* p, MonoTime now) {
  const ProviderId local = p ? p->sid : kNoProvider;
  const std::uint32_t rank = priorityRank(options, info.priority_class);
  if (!leaser) {
    CampaignSpec cs{info.limit, info.weight, local};
    cs.priority = rank;
    return scheduler.addCampaign(cs, now);
  }
  QuotaCampaignSpec spec;
  spec.priority = rank;
  spec.name = quotaName(info.id);
  spec.limit = info.limit;
  spec.weight = info.weight;
  spec.provider = p ? p->qid : UINT32_MAX;
  spec.local_provider = local;
  return leaser->addCampaign(spec, now);
}

AdaptiveRateOptions WorkerCore::Impl::adaptiveFor(double ceiling) const {
  AdaptiveRateOptions ao = options.adaptive;
  ao.ceiling = ceiling;
  ao.floor = std::min(ao.floor, ceiling);
  return ao;
}

WorkerCore::Impl::Provider* WorkerCore::Impl::addProvider(const ProviderInfo& info, MonoTime now) {
  auto p = std::make_unique<Provider>();
  p->info = info;
  p->sid = scheduler.addProvider(ProviderSpec{info.limit}, now);
  p->judge.emplace(options.throttle_judge, now);
  if (leaser) {
    QuotaProviderSpec spec;
    spec.name = quotaName(info.id);
    spec.limit = info.limit;
    spec.degraded = options.degraded;
    spec.adaptive = options.adaptive;
    spec.breaker = options.breaker;
    spec.local_provider = p->sid;
    p->qid = leaser->addProvider(spec);
  } else {
    p->breaker.emplace(options.breaker, now);
    if (info.limit && info.limit->rate_per_s > 0) {
      p->adaptive.emplace(adaptiveFor(info.limit->rate_per_s), now);
      p->applied_rate = info.limit->rate_per_s;
    }
  }
  Provider* raw = p.get();
  providers.emplace(info.id, std::move(p));
  return raw;
}

bool WorkerCore::Impl::crowdThrottled(Provider* p, const std::string& recipient, MonoTime now) {
  auto& seen = p->recipient_throttles;
  while (!seen.empty() && (now - seen.front().first >= AcceptedMeter::kRecipientWindow || seen.size() >= kCrowdKept))
    seen.pop_front();
  const std::size_t h = std::hash<std::string>{}(recipient);
  // Counted for every worker's sum once per window per token: one hot token
  // refused at each of its retries is not a crowd.
  if (std::none_of(seen.begin(), seen.end(), [h](const auto& e) { return e.second == h; }))
    p->meter.addRecipientThrottle(now);
  seen.emplace_back(now, h);
  std::size_t distinct = 0;
  for (std::size_t i = 0; i < seen.size() && distinct < kCrowd; ++i) {
    bool earlier = false;
    for (std::size_t j = 0; j < i && !earlier; ++j) earlier = seen[j].second == seen[i].second;
    if (!earlier) ++distinct;
  }
  // With the other workers' over the window, as the quota summed them: spread
  // over four workers, the provider window's refusals seldom made three at
  // any one. (Unknown, 0, while the quota is degraded.)
  const double elsewhere = leaser && p->qid != UINT32_MAX ? leaser->recipientThrottlesElsewhere(p->qid) : 0;
  return static_cast<double>(distinct) + elsewhere >= static_cast<double>(kCrowd);
}

void WorkerCore::Impl::handle(const SendResult& answer, MonoTime now) {
  auto it = inflight.find(answer.ticket);
  if (it == inflight.end()) return;  // not ours: cannot happen with one owner
  Campaign* c = it->second.first;
  Item item = std::move(it->second.second);
  inflight.erase(it);
  --c->in_flight;
  buffered_bytes -= item.bytes();
  ++item.attempts;
  if (answer.outcome == SendOutcome::kFault) ++item.faults;
  if (answer.outcome == SendOutcome::kThrottled) ++item.throttled;
  Provider* const p = providerOf(c, item);  // the one this attempt went to (failover: maybe not c's first)
  // Apple answers TooManyRequests for one device token; several tokens
  // refused within seconds is the provider's window speaking in that answer
  // (a fake's, or a gateway's in front of it): it pauses and slows the
  // provider like any provider throttle, where deferring each token alone
  // kept sending above the window (5,833 429s a minute, bench/RESULTS-push.md).
  std::optional<SendResult> promoted;  // copied only for a crowd throttle, not built for every answer
  if (p && answer.outcome == SendOutcome::kThrottled && answer.scope == AnswerScope::kRecipient &&
      crowdThrottled(p, item.msg.recipient, now)) {
    promoted.emplace(answer);
    promoted->scope = AnswerScope::kProvider;
  }
  const SendResult& r = promoted ? *promoted : answer;
  if (p && options.adaptive.latency_threshold > Nanos{0} && r.latency > options.adaptive.latency_threshold)
    slowAnswer(p, r.latency, now);
  // Every answer but a throttle counts for the provider's circuit breaker;
  // every answer counts for its throttle judge.
  if (p && r.outcome != SendOutcome::kThrottled) answered(p, r.outcome == SendOutcome::kFault, now);
  if (p) judge(p, r, now);
  const bool token_held = p && deadTokenHeld(p, r, now);  // worker_core_tokens.cc
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const AttemptHistory history{item.attempts, item.faults, item.throttled, now - item.first_attempt.value_or(now)};
  const RetryDecision d = decideRetry(options.retry, r, history, u(rng));
  if (p && r.status >= 500 && r.status <= 599) ++p->server_errors;
  switch (d.kind) {
    case RetryDecision::Kind::kDelivered:
      addRow(c, item, DeliveryStatus::kSent, item.attempts, "", r.provider_message_id);
      return;
    case RetryDecision::Kind::kFail:
      if (token_held) {  // the dead-token guard holds: a failed row, no token marked dead
        addRow(c, item, DeliveryStatus::kFailed, item.attempts, heldTokenReason(p, r, now));
        return;
      }
      if (r.outcome == SendOutcome::kInvalidToken) {
        // A dead-letter row of its own, carrying the token to the ledger's invalid_tokens.
        DeliveryRecord& row = addRow(c, item, DeliveryStatus::kInvalidToken, item.attempts, d.reason);
        row.token = item.msg.recipient;
        row.invalid_since_ms = r.invalid_since_ms;
        return;
      }
      // A provider message id on a failure (the first part of an SMS the
      // SMSC holds) goes on the row too, so that a receipt for it lands there.
      addRow(c, item, DeliveryStatus::kFailed, item.attempts, d.reason, r.provider_message_id);
      return;
    case RetryDecision::Kind::kRetry: break;
  }
  // One recipient throttled (APNs TooManyRequests): only this message waits;
  // d.throttled is false, so the provider neither pauses nor slows down.
  if (d.recipient_throttled && p) ++p->recipient_throttled;
  if (d.throttled && p) ++p->throttled;
  ++c->stats.retries;
  if (const char* why = closedReason(c->info.state)) {
    addRow(c, item, DeliveryStatus::kFailed, item.attempts, why);
    return;
  }
  if (staleAfterRevoke(item)) {
    // Its partition moved while it was in the sink: its new owner reads it
    // again (its offset was not committed), so holding it here too would
    // count it, and send it, twice.
    gate.giveBack(item, c->rules);
    release(item.msg);
    return;
  }
  buffered_bytes += item.bytes();
  ++c->retrying;
  retries.emplace(now + d.delay, std::make_pair(c, std::move(item)));
}

// Every answer but a throttle goes to the provider's circuit breaker: the
// shared one with a global quota, this worker's own otherwise. Sustained
// faults open it: the provider pauses for the cooldown and slows down.
void WorkerCore::Impl::answered(Provider* p, bool fault, MonoTime now) {
  if (leaser && p->qid != UINT32_MAX) {
    leaser->reportAnswer(p->qid, fault);
    return;
  }
  if (!p->breaker || !p->breaker->report(fault ? 0 : 1, fault ? 1 : 0, now)) return;
  p->paused_until = std::max(p->paused_until, p->breaker->openUntil());
  if (p->adaptive) p->adaptive->onFaults(now, p->breaker->openUntil() - now);
}

// The provider's throttles, judged (include/pacer/throttle_judge.h): a
// ceiling brings the rate down to what the provider accepted, for every
// worker, and pauses the provider for the longest Retry-After its throttles
// named (a provider with no adaptive rate pauses for the default throttle
// pause instead); noise takes such a cut back. A throttle judged neither
// only makes its own message wait (its retry delay).
void WorkerCore::Impl::judge(Provider* p, const SendResult& r, MonoTime now) {
  // A throttle of one recipient (APNs TooManyRequests) says nothing of the provider.
  if (r.outcome == SendOutcome::kThrottled && r.scope == AnswerScope::kRecipient) return;
  const bool shared = leaser && p->qid != UINT32_MAX;
  // Shared, one worker judges for all: four judges each learning the noise
  // alone would each cut and pause everyone on their way. The others still
  // watch their own answers (their own connections may be refused where the
  // judge's are not: one node of a provider, one bind): a period refused
  // more than noise can ever be (max_noise) is a ceiling wherever it is seen.
  const bool judges = !shared || leaser->judges(p->qid);
  if (judges != p->judging) {  // it takes over or hands over: from now, with the noise the judge learned
    p->judging = judges;
    p->judge->resume(now, leaser->sharedNoise(p->qid));
    p->noise_sent = p->judge->noise();
  }
  const MonoTime paused = shared ? std::max(p->paused_until, leaser->pausedUntil(p->qid)) : p->paused_until;
  p->judge->pausedUntil(paused);
  // What the provider took per second: this worker's own answers, summed
  // over every worker by the quota when it is shared (and not degraded).
  const bool throttled = r.outcome == SendOutcome::kThrottled;
  p->meter.pausedUntil(paused);
  p->meter.add(now, throttled);
  const AcceptedRates own = p->meter.last(now);
  if (shared) leaser->reportRates(p->qid, own);
  p->judge->providerRates(shared && !leaser->degraded(p->qid) ? leaser->providerRates(p->qid) : own);
  const std::optional<double> held = shared ? leaser->effectiveRate(p->qid)
                                     : p->adaptive ? std::optional<double>(p->adaptive->rate(now))
                                                   : std::nullopt;
  p->judge->heldTo(held.value_or(0));
  const ThrottleVerdict v = p->judge->answer(now, throttled, r.retry_after);
  if (!judges) {
    if (v.kind == ThrottleVerdict::Kind::kNone) return;
    if (v.kind != ThrottleVerdict::Kind::kCapacity || v.share <= options.throttle_judge.max_noise) {
      p->judge->resume(now, leaser->sharedNoise(p->qid));  // not acted on: no cut of its own to test
      return;
    }
  } else if (shared && std::abs(p->judge->noise() - p->noise_sent) >= kNoiseReportStep) {
    p->noise_sent = p->judge->noise();
    leaser->reportNoiseLevel(p->qid, p->noise_sent);
  }
  if (v.kind == ThrottleVerdict::Kind::kNone) return;
  p->last_verdict = v;
  // A cut taken back, in whole or part: its throttles were noise, or a
  // quiet test found it too deep (raised a step).
  if (v.kind == ThrottleVerdict::Kind::kNoise || v.kind == ThrottleVerdict::Kind::kRaise) {
    ++p->noise_verdicts;
    if (p->adaptive) p->adaptive->restoreLimit(now, v.keep);
    if (shared) leaser->reportNoise(p->qid, v.keep);
    return;
  }
  ++p->capacity_cuts;
  const bool adapts = p->adaptive || (shared && p->info.limit && p->info.limit->rate_per_s > 0);
  const Nanos pause = v.pause > Nanos{0} || adapts ? v.pause : options.retry.default_throttle_pause;
  // Shared, the quota decides the pause for every worker (a round of cuts
  // pauses once, include/pacer/adaptive_rate.h) and its leases go now.
  if (!shared) p->paused_until = std::max(p->paused_until, now + pause);
  if (p->adaptive) p->adaptive->onCapacity(now, pause, v.keep);
  if (shared) leaser->reportCapacity(p->qid, pause, v.keep);  // drops its leases too
}

// An answer slower than the latency threshold counts like a throttle for
// the adaptive rate, without a pause.
void WorkerCore::Impl::slowAnswer(Provider* p, Nanos latency, MonoTime now) {
  if (p->adaptive) p->adaptive->onLatency(now, latency);
  if (leaser && p->qid != UINT32_MAX) leaser->reportSlow(p->qid);
}

void WorkerCore::Impl::releaseRetries(MonoTime now) {
  while (!retries.empty() && retries.begin()->first <= now) {
    auto node = retries.extract(retries.begin());
    Campaign* c = node.mapped().first;
    --c->retrying;
    buffered_bytes -= node.mapped().second.bytes();
    if (const char* why = closedReason(c->info.state)) {
      addRow(c, node.mapped().second, DeliveryStatus::kFailed, node.mapped().second.attempts, why);
      continue;
    }
    if (expireIfDue(c, node.mapped().second, now)) continue;
    enqueue(c, std::move(node.mapped().second), true);
  }
}

MessageCost WorkerCore::Impl::costOf(const Campaign* c, const Message& m) const {
  if (!options.cost) return MessageCost{};
  return options.cost->cost(m, c->provider ? c->provider->info.id : c->info.provider);
}

void WorkerCore::Impl::dispatch(MonoTime now, bool& blocked) {
  const std::size_t sink_free = sink.maxInFlight() > sink.inFlight() ? sink.maxInFlight() - sink.inFlight() : 0;
  const std::size_t unrec = unrecorded();
  const std::size_t ledger_free = options.max_unrecorded > unrec ? options.max_unrecorded - unrec : 0;
  const std::size_t capacity = std::min(sink_free, ledger_free);
  blocked = ledger_free == 0;
  if (sink_free == 0) sink_full_at = now;
  if (capacity == 0 || queued == 0) return;
  // Paid messages the sink refused last time go first (their campaigns may
  // have no backlog left for the scheduler to grant).
  if (!refused_paid.empty()) {
    std::vector<Campaign*> still;
    for (Campaign* c : refused_paid)
      if (!c->sched_paused && !sendPaid(c, now)) still.push_back(c);
    refused_paid = std::move(still);
    if (queued == 0) return;  // they were the whole backlog: nothing left to grant
  }
  // The tick grants quota units: room for `capacity` messages of the
  // average queued cost (1 unit each without a cost model).
  const std::uint64_t per_message = std::max<std::uint64_t>(1, (queued_units + queued - 1) / queued);
  // One batch for every active campaign running low; the tick then runs
  // at the time its answers arrived (no earlier than `now`).
  MonoTime tick_at = now;
  if (leaser) {
    // A sink that was full in the last second sets the pace (an SMSC's window
    // under latency): the worker then holds no more tokens than the sink has
    // room for, since those falling due while it is full are forfeited, lost
    // to every worker (QuotaLeaser::refresh).
    const bool sink_bound = sink_full_at && now - *sink_full_at < kSinkBoundFor;
    leaser->refresh(now, sink_bound ? capacity * per_message : UINT64_MAX);
    tick_at = std::max(now, leaser->lastAnswer());
  }
  const std::span<const Grant> grants = scheduler.tick(tick_at, capacity * per_message);
  // Copy: the spans die at the next non-const scheduler call.
  std::vector<Grant> copy(grants.begin(), grants.end());
  // Campaigns whose sink refused a message this tick (a provider's own sink
  // behind a routing sink can be full while the others have room).
  std::vector<Campaign*> refused;
  for (const Grant& g : copy) {
    Campaign* c = by_sid[g.campaign];
    c->queue.grant(g.count);  // paid: spent on whole messages now or at a later tick
    if (std::find(refused.begin(), refused.end(), c) != refused.end()) continue;
    if (!sendPaid(c, now)) refused.push_back(c);
  }
  for (Campaign* c : refused)
    if (std::find(refused_paid.begin(), refused_paid.end(), c) == refused_paid.end()) refused_paid.push_back(c);
}

// Hands the campaign's paid messages to the sink; false when the sink
// refused one (it goes back, first in line and still paid).
bool WorkerCore::Impl::sendPaid(Campaign* c, MonoTime now) {
  while (c->queue.affordable()) {
    if (expireFront(c, now)) continue;  // the last check, on the sending step's wall time
    Item item = take(c);
    // Quiet again since it was queued (a retry, or a long wait in the
    // queue): it waits again; its token is spent (under the rate, never over).
    if (c->rules.quiet && gate.holdForQuiet(c, item, now)) continue;
    // Queued before the campaign had a cap (held, or a cap added since): asked first.
    if (!c->rules.caps.empty() && item.caps_counted == 0) {
      gate.toQueue(c, std::move(item));
      continue;
    }
    if (!item.first_attempt) item.first_attempt = now;
    if (c->provider) item.msg.provider = c->provider->info.id;  // outside bytes(): set while it is counted nowhere
    const std::uint64_t ticket = next_ticket++;
    auto [it, inserted] = inflight.emplace(ticket, std::make_pair(c, std::move(item)));
    buffered_bytes += it->second.second.bytes();
    if (!sink.submit(it->second.second.msg, ticket)) {
      // The sink is full for this campaign after all. Other campaigns'
      // grants go on: their sink may have room.
      buffered_bytes -= it->second.second.bytes();
      Item back = std::move(it->second.second);
      inflight.erase(it);
      buffered_bytes += back.bytes();
      ++queued;
      queued_units += back.cost;
      c->queue.putBack(std::move(back));
      return false;
    }
    ++c->in_flight;
  }
  return true;
}

}  // namespace pacer
