#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <unordered_map>

#include "pacer/adaptive_rate.h"
#include "pacer/circuit_breaker.h"
#include "pacer/worker.h"

namespace pacer {

std::optional<CampaignState> parseCampaignState(std::string_view s) noexcept {
  if (s == "active") return CampaignState::kActive;
  if (s == "paused") return CampaignState::kPaused;
  if (s == "cancelled") return CampaignState::kCancelled;
  if (s == "completed") return CampaignState::kCompleted;
  return std::nullopt;
}

namespace {

std::optional<std::string> limitProblem(const char* rate_name, const std::optional<RateLimit>& limit) {
  if (!limit) return std::nullopt;
  if (!(limit->rate_per_s > 0 && limit->rate_per_s <= kMaxRowRate))
    return fmt::format("{} {} is not a number in (0, {:.0f}]", rate_name, limit->rate_per_s, kMaxRowRate);
  if (!(limit->burst >= 1 && limit->burst <= kMaxRowBurst))
    return fmt::format("burst {} is not a number in [1, {:.0f}]", limit->burst, kMaxRowBurst);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> rowProblem(const CampaignInfo& c) {
  if (auto p = limitProblem("send_rate", c.limit)) return p;
  if (!(c.weight > 0 && c.weight <= kMaxRowWeight))
    return fmt::format("weight {} is not a number in (0, {:.0f}]", c.weight, kMaxRowWeight);
  return std::nullopt;
}

std::optional<std::string> rowProblem(const ProviderInfo& p) { return limitProblem("rate", p.limit); }

namespace {

// A message on its way through the worker.
struct Item {
  Message msg;
  int attempts = 0;                                      // attempts so far, of every kind
  int faults = 0;                                        // of them, answered kFault
  int throttled = 0;                                     // of them, answered kThrottled
  bool tracked = true;                                   // its offset is in the tracker (false: it came from parking)
  std::optional<MonoTime> first_attempt = std::nullopt;  // when the first attempt was handed to the sink
  std::size_t bytes() const {
    return sizeof(Item) + msg.id.size() + msg.campaign.size() + msg.recipient.size() + msg.payload.size() +
           msg.position.topic.size();
  }
};

bool samePartition(const Position& p, const TopicPartition& tp) {
  return p.partition == tp.partition && p.topic == tp.topic;
}

}  // namespace

struct WorkerCore::Impl {
  struct Provider;
  struct Campaign {
    CampaignInfo info;
    CampaignId sid = 0;
    Provider* provider = nullptr;
    std::deque<Item> queue;
    std::size_t to_park = 0;         // items of this campaign waiting in to_park
    std::size_t parked_waiting = 0;  // parked, not yet claimed back (an estimate)
    MonoTime next_claim{};
    bool sched_paused = false;
    bool held = false;          // its row never passed its checks: its messages wait
    std::size_t in_flight = 0;  // in the sink
    std::size_t retrying = 0;   // in `retries`
    CampaignStats stats;
  };
  struct Provider {
    ProviderInfo info;
    ProviderId sid = kNoProvider;
    std::uint32_t qid = UINT32_MAX;  // the leaser's provider id (with a global quota)
    MonoTime paused_until{};
    bool paused = false;
    std::optional<AdaptiveRate> adaptive;   // without a global quota (with one it is shared there)
    std::optional<CircuitBreaker> breaker;  // likewise
    double applied_rate = 0;
    std::uint64_t throttled = 0;
    bool from_row = false;  // set by a good row (upsertProvider), not a placeholder
    std::uint64_t server_errors = 0;  // answers with a 5xx status (the console plots them)
    std::vector<Campaign*> campaigns;
  };

  Impl(WorkerOptions o, LedgerInterface& l, SinkInterface& s, ParkingInterface* p, MonoTime now)
      : options(std::move(o)),
        ledger(l),
        sink(s),
        parking(p),
        scheduler(options.scheduler),
        rng(options.seed),
        next_scan(now),
        next_renew(now + options.renew_interval) {
    if (options.quota) {
      LeaseOptions lo = options.lease;
      lo.seed = options.seed;
      leaser.emplace(scheduler, *options.quota, lo, options.quota_observer);
    }
  }

  WorkerOptions options;
  LedgerInterface& ledger;
  SinkInterface& sink;
  ParkingInterface* parking;
  Scheduler scheduler;
  std::optional<QuotaLeaser> leaser;  // with a global quota: owns the campaigns' limiters
  OffsetTracker tracker;
  std::mt19937_64 rng;

  std::unordered_map<std::string, std::unique_ptr<Campaign>> campaigns;
  std::unordered_map<std::string, std::pair<std::uint64_t, std::uint32_t>> held_ids;  // id -> (fingerprint, copies)
  std::vector<Campaign*> by_sid;
  std::unordered_map<std::string, std::unique_ptr<Provider>> providers;
  std::map<TopicPartition, std::vector<std::int64_t>> skip;  // finished offsets per assigned partition

  std::unordered_map<std::uint64_t, std::pair<Campaign*, Item>> inflight;
  std::uint64_t next_ticket = 1;
  std::multimap<MonoTime, std::pair<Campaign*, Item>> retries;
  std::vector<std::pair<Campaign*, Item>> to_park;
  MonoTime to_park_since{};
  MonoTime park_retry_at{};
  std::set<Campaign*> with_parked;
  MonoTime next_scan;
  MonoTime next_renew;

  std::vector<DeliveryRecord> rows;    // pending, in the order made
  std::vector<char> rows_tracked;      // per row: its offset is in the tracker
  std::optional<MonoTime> rows_since;  // when the oldest pending row was made (set at the step that made it)
  MonoTime ledger_retry_at{};
  bool ledger_failing = false;   // the last ledger write failed
  bool parking_failing = false;  // the last park() failed

  MonoTime now{};         // of the current step or offer
  bool draining = false;  // drain(): no new sends
  std::size_t queued = 0;
  std::size_t buffered_bytes = 0;
  WorkerStats totals;
  std::vector<SendResult> results;
  std::vector<Message> scratch;

  // --- accounting -------------------------------------------------------

  std::size_t bufferedMessages() const { return queued + to_park.size() + retries.size() + inflight.size(); }
  std::size_t unrecorded() const { return inflight.size() + rows.size(); }
  bool belowBounds() const {
    return bufferedMessages() < options.max_buffered_messages && buffered_bytes < options.max_buffered_bytes;
  }

  std::size_t keep(const Campaign& c) const {
    if (parking && c.held) return options.park_min_keep;  // waits for a good row: park the rest
    if (!parking || !c.info.limit) return SIZE_MAX;
    const double secs = std::chrono::duration<double>(options.park_keep_for).count();
    const double k = c.info.limit->rate_per_s * secs;
    return std::max<std::size_t>(options.park_min_keep, k >= 1e15 ? SIZE_MAX : static_cast<std::size_t>(k));
  }

  // --- ledger rows --------------------------------------------------------

  void addRow(Campaign* c, const Item& item, DeliveryStatus status, int attempts, std::string reason) {
    DeliveryRecord r;
    r.message_id = item.msg.id;
    r.campaign = item.msg.campaign;
    r.topic = item.msg.position.topic;
    r.partition = item.msg.position.partition;
    r.offset = item.msg.position.offset;
    r.status = status;
    r.attempts = attempts;
    r.reason = std::move(reason);
    r.unpark = !item.tracked;
    r.fingerprint = item.msg.fingerprint;
    release(item.msg);
    pushRow(std::move(r), item.tracked);
    count(c, status);
  }

  // --- ids held ---------------------------------------------------------------
  // The ids of the messages this worker holds (queued, in the sink, retrying,
  // waiting to be parked), with what they said, so that another message
  // reusing one of them is caught before it is sent under the same id.

  void hold(const Message& m) {
    auto [it, fresh] = held_ids.try_emplace(m.id, m.fingerprint, 0);
    ++it->second.second;
  }

  void release(const Message& m) {
    auto it = held_ids.find(m.id);
    if (it != held_ids.end() && --it->second.second == 0) held_ids.erase(it);
  }

  // Another message than the one held under this id (same id, other content).
  bool clashes(const Message& m) const {
    auto it = held_ids.find(m.id);
    return it != held_ids.end() && it->second.first != m.fingerprint;
  }

  void pushRow(DeliveryRecord r, bool tracked) {
    rows.push_back(std::move(r));
    rows_tracked.push_back(tracked ? 1 : 0);
  }

  void count(Campaign* c, DeliveryStatus status) {
    switch (status) {
      case DeliveryStatus::kSent:
        ++totals.sent;
        if (c) {
          ++c->stats.sent;
          if (!c->stats.first_sent) c->stats.first_sent = now;
          c->stats.last_sent = now;
        }
        break;
      case DeliveryStatus::kFailed:
        ++totals.failed;
        if (c) ++c->stats.failed;
        break;
      case DeliveryStatus::kRejected:
        ++totals.rejected;
        if (c) ++c->stats.rejected;
        break;
    }
  }

  bool writeRows(MonoTime now) {
    if (rows.empty()) return true;
    try {
      totals.ledger_rows += ledger.record(rows);
    } catch (const LedgerUnavailableError&) {
      ++totals.ledger_errors;
      ledger_failing = true;
      ledger_retry_at = now + options.ledger_retry_interval;
      return false;
    } catch (const LedgerRejectedError&) {
      // Never dropped: the rows stay and the write is tried again.
      ++totals.ledger_errors;
      ledger_failing = true;
      ledger_retry_at = now + options.ledger_retry_interval;
      return false;
    }
    ledger_failing = false;
    ++totals.ledger_writes;
    for (std::size_t i = 0; i < rows.size(); ++i)
      if (rows_tracked[i]) tracker.finish(rows[i].topic, rows[i].partition, rows[i].offset);
    rows.clear();
    rows_tracked.clear();
    rows_since.reset();
    return true;
  }

  bool ledgerDue(MonoTime now, bool blocked) const {
    if (rows.empty() || now < ledger_retry_at) return false;
    return rows.size() >= options.ledger_batch || blocked ||
           now - rows_since.value_or(now) >= options.ledger_flush_interval;
  }

  // --- parking ------------------------------------------------------------

  bool writeParking(MonoTime now) {
    if (to_park.empty()) return true;
    scratch.clear();
    for (auto& [c, item] : to_park) scratch.push_back(item.msg);
    try {
      parking->park(scratch);
    } catch (const LedgerUnavailableError&) {
      ++totals.ledger_errors;
      parking_failing = true;
      park_retry_at = now + options.ledger_retry_interval;
      return false;
    } catch (const LedgerRejectedError&) {
      ++totals.ledger_errors;
      parking_failing = true;
      park_retry_at = now + options.ledger_retry_interval;
      return false;
    }
    parking_failing = false;
    for (auto& [c, item] : to_park) {
      if (item.tracked) tracker.finish(item.msg.position.topic, item.msg.position.partition, item.msg.position.offset);
      release(item.msg);
      buffered_bytes -= item.bytes();
      --c->to_park;
      ++c->parked_waiting;
      ++c->stats.parked;
      ++totals.parked;
      with_parked.insert(c);
    }
    to_park.clear();
    return true;
  }

  void claimBack(MonoTime now) {
    for (auto it = with_parked.begin(); it != with_parked.end();) {
      Campaign* c = *it;
      const bool cancelled = c->info.state == CampaignState::kCancelled;
      const std::size_t k = keep(*c);
      const bool room = cancelled || (c->info.state == CampaignState::kActive && c->queue.size() < k / 2);
      if (!room || now < c->next_claim || c->to_park > 0) {
        ++it;
        continue;
      }
      const std::size_t want = cancelled ? options.ledger_batch : std::min(k - c->queue.size(), options.ledger_batch);
      std::vector<Message> got;
      try {
        got = parking->claim(c->info.id, want);
      } catch (const std::runtime_error&) {
        ++totals.ledger_errors;
        c->next_claim = now + options.ledger_retry_interval;
        ++it;
        continue;
      }
      c->next_claim = now + std::chrono::milliseconds(100);
      c->stats.unparked += got.size();
      totals.unparked += got.size();
      for (Message& m : got) {
        Item item;
        item.msg = std::move(m);
        item.msg.fingerprint = contentFingerprint(item.msg);
        item.tracked = false;
        hold(item.msg);
        if (cancelled) {
          addRow(c, item, DeliveryStatus::kFailed, 0, "cancelled");
        } else {
          enqueue(c, std::move(item), false);
        }
      }
      if (got.size() < want) {
        c->parked_waiting = 0;
        it = with_parked.erase(it);
      } else {
        c->parked_waiting = c->parked_waiting > got.size() ? c->parked_waiting - got.size() : 1;
        ++it;
      }
    }
  }

  // --- queues -------------------------------------------------------------

  void enqueue(Campaign* c, Item item, bool at_front) {
    buffered_bytes += item.bytes();
    if (at_front)
      c->queue.push_front(std::move(item));
    else
      c->queue.push_back(std::move(item));
    ++queued;
    scheduler.addBacklog(c->sid, 1);
  }

  // A new message for `c`: queued, or parked when the campaign already has
  // more in memory than it can send soon.
  void route(Campaign* c, Item item, MonoTime now) {
    if (parking && item.tracked && (c->parked_waiting > 0 || c->to_park > 0 || c->queue.size() >= keep(*c))) {
      if (to_park.empty()) to_park_since = now;
      buffered_bytes += item.bytes();
      ++c->to_park;
      to_park.emplace_back(c, std::move(item));
      return;
    }
    enqueue(c, std::move(item), false);
  }

  Item popFront(Campaign* c) {
    Item item = std::move(c->queue.front());
    c->queue.pop_front();
    --queued;
    buffered_bytes -= item.bytes();
    return item;
  }

  void failQueued(Campaign* c, const std::string& reason) {
    const std::size_t n = c->queue.size();
    while (!c->queue.empty()) {
      Item item = popFront(c);
      addRow(c, item, DeliveryStatus::kFailed, item.attempts, reason);
    }
    scheduler.dropBacklog(c->sid, n);
  }

  // --- pauses ---------------------------------------------------------------

  void applyPause(Campaign* c) {
    const bool want = c->held || c->info.state != CampaignState::kActive || (c->provider && c->provider->paused);
    if (want == c->sched_paused) return;
    if (want)
      scheduler.pause(c->sid);
    else
      scheduler.resume(c->sid);
    c->sched_paused = want;
  }

  void providerPauses(MonoTime now) {
    for (auto& [id, p] : providers) {
      const bool paused = now < p->paused_until;
      if (paused != p->paused) {
        p->paused = paused;
        for (Campaign* c : p->campaigns) applyPause(c);
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

  Provider* provider(const std::string& id, MonoTime now) {
    if (id.empty()) return nullptr;
    auto it = providers.find(id);
    if (it != providers.end()) return it->second.get();
    // A campaign names a provider this worker has not loaded: unlimited until it is.
    ProviderInfo info;
    info.id = id;
    return addProvider(info, now);
  }

  // A name the quota takes as a key part and hash tag: no '{' or '}'.
  static std::string quotaName(const std::string& id) {
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
  CampaignId registerCampaign(const CampaignInfo& info, Provider* p, MonoTime now) {
    const ProviderId local = p ? p->sid : kNoProvider;
    if (!leaser) return scheduler.addCampaign(CampaignSpec{info.limit, info.weight, local}, now);
    QuotaCampaignSpec spec;
    spec.name = quotaName(info.id);
    spec.limit = info.limit;
    spec.weight = info.weight;
    spec.provider = p ? p->qid : UINT32_MAX;
    spec.local_provider = local;
    return leaser->addCampaign(spec, now);
  }

  AdaptiveRateOptions adaptiveFor(double ceiling) const {
    AdaptiveRateOptions ao = options.adaptive;
    ao.ceiling = ceiling;
    ao.floor = std::min(ao.floor, ceiling);
    return ao;
  }

  Provider* addProvider(const ProviderInfo& info, MonoTime now) {
    auto p = std::make_unique<Provider>();
    p->info = info;
    p->sid = scheduler.addProvider(ProviderSpec{info.limit}, now);
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

  // --- sink results ---------------------------------------------------------

  void handle(const SendResult& r, MonoTime now) {
    auto it = inflight.find(r.ticket);
    if (it == inflight.end()) return;  // not ours: cannot happen with one owner
    Campaign* c = it->second.first;
    Item item = std::move(it->second.second);
    inflight.erase(it);
    --c->in_flight;
    buffered_bytes -= item.bytes();
    ++item.attempts;
    if (r.outcome == SendOutcome::kFault) ++item.faults;
    if (r.outcome == SendOutcome::kThrottled) ++item.throttled;
    if (c->provider && options.adaptive.latency_threshold > Nanos{0} && r.latency > options.adaptive.latency_threshold)
      slowAnswer(c->provider, r.latency, now);
    // Every answer but a throttle counts for the provider's circuit breaker.
    if (c->provider && r.outcome != SendOutcome::kThrottled)
      answered(c->provider, r.outcome == SendOutcome::kFault, now);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const AttemptHistory history{item.attempts, item.faults, item.throttled, now - item.first_attempt.value_or(now)};
    const RetryDecision d = decideRetry(options.retry, r, history, u(rng));
    if (c->provider && r.status >= 500 && r.status <= 599) ++c->provider->server_errors;
    switch (d.kind) {
      case RetryDecision::Kind::kDelivered: addRow(c, item, DeliveryStatus::kSent, item.attempts, ""); return;
      case RetryDecision::Kind::kFail: addRow(c, item, DeliveryStatus::kFailed, item.attempts, d.reason); return;
      case RetryDecision::Kind::kRetry: break;
    }
    if (d.throttled && c->provider) {
      Provider* p = c->provider;
      p->paused_until = std::max(p->paused_until, now + d.delay);
      ++p->throttled;
      if (p->adaptive) p->adaptive->onThrottled(now, d.delay);
      if (leaser && p->qid != UINT32_MAX) leaser->reportThrottle(p->qid, d.delay);  // drops its leases too
    }
    ++c->stats.retries;
    if (c->info.state == CampaignState::kCancelled) {
      addRow(c, item, DeliveryStatus::kFailed, item.attempts, "cancelled");
      return;
    }
    buffered_bytes += item.bytes();
    ++c->retrying;
    retries.emplace(now + d.delay, std::make_pair(c, std::move(item)));
  }

  // Every answer but a throttle goes to the provider's circuit breaker: the
  // shared one with a global quota, this worker's own otherwise. Sustained
  // faults open it: the provider pauses for the cooldown and slows down.
  void answered(Provider* p, bool fault, MonoTime now) {
    if (leaser && p->qid != UINT32_MAX) {
      leaser->reportAnswer(p->qid, fault);
      return;
    }
    if (!p->breaker || !p->breaker->report(fault ? 0 : 1, fault ? 1 : 0, now)) return;
    p->paused_until = std::max(p->paused_until, p->breaker->openUntil());
    if (p->adaptive) p->adaptive->onFaults(now, p->breaker->openUntil() - now);
  }

  // An answer slower than the latency threshold counts like a throttle for
  // the adaptive rate, without a pause.
  void slowAnswer(Provider* p, Nanos latency, MonoTime now) {
    if (p->adaptive) p->adaptive->onLatency(now, latency);
    if (leaser && p->qid != UINT32_MAX) leaser->reportSlow(p->qid);
  }

  void releaseRetries(MonoTime now) {
    while (!retries.empty() && retries.begin()->first <= now) {
      auto node = retries.extract(retries.begin());
      Campaign* c = node.mapped().first;
      --c->retrying;
      buffered_bytes -= node.mapped().second.bytes();
      if (c->info.state == CampaignState::kCancelled) {
        addRow(c, node.mapped().second, DeliveryStatus::kFailed, node.mapped().second.attempts, "cancelled");
        continue;
      }
      enqueue(c, std::move(node.mapped().second), true);
    }
  }

  void dispatch(MonoTime now, bool& blocked) {
    const std::size_t sink_free = sink.maxInFlight() > sink.inFlight() ? sink.maxInFlight() - sink.inFlight() : 0;
    const std::size_t unrec = unrecorded();
    const std::size_t ledger_free = options.max_unrecorded > unrec ? options.max_unrecorded - unrec : 0;
    const std::size_t capacity = std::min(sink_free, ledger_free);
    blocked = ledger_free == 0;
    if (capacity == 0 || queued == 0) return;
    // One batch for every active campaign running low; the tick then runs
    // at the time its answers arrived (no earlier than `now`).
    MonoTime tick_at = now;
    if (leaser) {
      leaser->refresh(now);
      tick_at = std::max(now, leaser->lastAnswer());
    }
    const std::span<const Grant> grants = scheduler.tick(tick_at, capacity);
    // Copy: the spans die at the next non-const scheduler call.
    std::vector<Grant> copy(grants.begin(), grants.end());
    // Campaigns whose sink refused a message this tick (a provider's own sink
    // behind a routing sink can be full while the others have room).
    std::vector<Campaign*> refused;
    for (const Grant& g : copy) {
      Campaign* c = by_sid[g.campaign];
      if (std::find(refused.begin(), refused.end(), c) != refused.end()) {
        scheduler.addBacklog(c->sid, g.count);  // still queued: the scheduler must keep counting them
        continue;
      }
      for (std::uint64_t k = 0; k < g.count && !c->queue.empty(); ++k) {
        Item item = popFront(c);
        if (!item.first_attempt) item.first_attempt = now;
        const std::uint64_t ticket = next_ticket++;
        auto [it, inserted] = inflight.emplace(ticket, std::make_pair(c, std::move(item)));
        buffered_bytes += it->second.second.bytes();
        if (!sink.submit(it->second.second.msg, ticket)) {
          // The sink is full for this campaign after all: back to the front,
          // and the rest of the grant back into the scheduler's count (the
          // messages stay queued); tokens already spent are lost (never over,
          // at worst a little under). Other campaigns' grants go on: their
          // sink may have room.
          buffered_bytes -= it->second.second.bytes();
          Item back = std::move(it->second.second);
          inflight.erase(it);
          enqueue(c, std::move(back), true);
          if (g.count > k + 1) scheduler.addBacklog(c->sid, g.count - k - 1);
          refused.push_back(c);
          break;
        }
        ++c->in_flight;
      }
    }
  }
};

WorkerCore::WorkerCore(WorkerOptions options, LedgerInterface& ledger, SinkInterface& sink, ParkingInterface* parking,
                       MonoTime now)
    : impl_(std::make_unique<Impl>(std::move(options), ledger, sink, parking, now)) {}

WorkerCore::~WorkerCore() = default;

void WorkerCore::setTuning(const RetryPolicy& retry, const AdaptiveRateOptions& adaptive, MonoTime now) {
  Impl& m = *impl_;
  m.options.retry = retry;
  m.options.adaptive = adaptive;
  for (auto& [id, p] : m.providers) {
    if (p->adaptive) p->adaptive->setTuning(m.options.adaptive, now);
    if (m.leaser && p->qid != UINT32_MAX) m.leaser->setProviderAdaptive(p->qid, m.options.adaptive);
  }
}

void WorkerCore::upsertProvider(const ProviderInfo& provider, MonoTime now) {
  Impl& m = *impl_;
  auto it = m.providers.find(provider.id);
  if (it == m.providers.end()) {
    m.addProvider(provider, now)->from_row = true;
    return;
  }
  Impl::Provider& p = *it->second;
  p.from_row = true;
  const bool changed =
      !p.info.limit != !provider.limit || (provider.limit && (p.info.limit->rate_per_s != provider.limit->rate_per_s ||
                                                              p.info.limit->burst != provider.limit->burst));
  p.info = provider;
  if (!changed) return;
  if (m.leaser && p.qid != UINT32_MAX) {
    // The global ceiling; the leaser applies the scheduler's provider limiter
    // (the shared adaptive rate is in the quota).
    m.leaser->setProviderLimit(p.qid, provider.limit, now);
  } else if (provider.limit && provider.limit->rate_per_s > 0) {
    if (p.adaptive)
      p.adaptive->setCeiling(provider.limit->rate_per_s, now);
    else
      p.adaptive.emplace(m.adaptiveFor(provider.limit->rate_per_s), now);
    p.applied_rate = p.adaptive->rate(now);
    m.scheduler.setProviderLimit(p.sid, limitAtRate(*provider.limit, p.applied_rate), now);
  } else {
    p.adaptive.reset();
    m.scheduler.setProviderLimit(p.sid, provider.limit, now);
  }
}

void WorkerCore::upsertCampaign(const CampaignInfo& info, MonoTime now) {
  Impl& m = *impl_;
  auto it = m.campaigns.find(info.id);
  if (it == m.campaigns.end()) {
    auto c = std::make_unique<Impl::Campaign>();
    c->info = info;
    c->stats.id = info.id;
    c->provider = m.provider(info.provider, now);
    c->sid = m.registerCampaign(info, c->provider, now);
    if (m.by_sid.size() <= c->sid) m.by_sid.resize(c->sid + 1, nullptr);
    m.by_sid[c->sid] = c.get();
    if (c->provider) c->provider->campaigns.push_back(c.get());
    Impl::Campaign* raw = c.get();
    m.campaigns.emplace(info.id, std::move(c));
    m.applyPause(raw);
    return;
  }
  Impl::Campaign* c = it->second.get();
  if (info.provider != c->info.provider) {
    // The scheduler cannot move a campaign between providers: register it again.
    if (c->provider) std::erase(c->provider->campaigns, c);
    const std::uint64_t backlog = m.scheduler.backlog(c->sid);
    if (m.leaser)
      m.leaser->removeCampaign(c->sid);
    else
      m.scheduler.removeCampaign(c->sid);
    m.by_sid[c->sid] = nullptr;
    c->provider = m.provider(info.provider, now);
    c->sid = m.registerCampaign(info, c->provider, now);
    if (m.by_sid.size() <= c->sid) m.by_sid.resize(c->sid + 1, nullptr);
    m.by_sid[c->sid] = c;
    m.scheduler.addBacklog(c->sid, backlog);
    if (c->provider) c->provider->campaigns.push_back(c);
    c->sched_paused = false;
  } else {
    const bool limit_changed =
        !c->info.limit != !info.limit || (info.limit && (c->info.limit->rate_per_s != info.limit->rate_per_s ||
                                                         c->info.limit->burst != info.limit->burst));
    if (limit_changed) {
      if (m.leaser)
        m.leaser->setCampaignLimit(c->sid, info.limit, now);
      else
        m.scheduler.setLimit(c->sid, info.limit, now);
    }
    if (c->info.weight != info.weight) {
      if (m.leaser)
        m.leaser->setCampaignWeight(c->sid, info.weight);
      else
        m.scheduler.setWeight(c->sid, info.weight);
    }
  }
  const bool cancelled_now = info.state == CampaignState::kCancelled && c->info.state != CampaignState::kCancelled;
  c->info = info;
  c->held = false;
  m.applyPause(c);
  if (cancelled_now) {
    m.failQueued(c, "cancelled");
    if (c->parked_waiting > 0) m.with_parked.insert(c);
  }
}

void WorkerCore::holdCampaign(const std::string& id, MonoTime now) {
  Impl& m = *impl_;
  if (m.campaigns.count(id) > 0) return;  // the last good version stays in force
  CampaignInfo info;
  info.id = id;
  info.state = CampaignState::kPaused;
  upsertCampaign(info, now);
  Impl::Campaign* c = m.campaigns.at(id).get();
  c->held = true;
  m.applyPause(c);
}

void WorkerCore::holdProvider(const std::string& id, MonoTime now) {
  Impl& m = *impl_;
  auto it = m.providers.find(id);
  // A good version known: it stays in force. Otherwise (never heard of, or
  // only named by a campaign): a rate of 0 until a good row arrives, so that
  // nothing goes out unlimited.
  if (it != m.providers.end() && it->second->from_row) return;
  upsertProvider(ProviderInfo{id, RateLimit{0, 1}}, now);
  m.providers.at(id)->from_row = false;
}

bool WorkerCore::knowsCampaign(std::string_view id) const {
  return impl_->campaigns.find(std::string(id)) != impl_->campaigns.end();
}

void WorkerCore::assign(const TopicPartition& tp, std::vector<std::int64_t> finished) {
  impl_->tracker.revoke(tp.topic, tp.partition);
  std::sort(finished.begin(), finished.end());
  impl_->skip[tp] = std::move(finished);
}

void WorkerCore::revoke(const TopicPartition& tp) {
  Impl& m = *impl_;
  for (auto& [id, c] : m.campaigns) {
    if (c->queue.empty()) continue;
    const std::size_t before = c->queue.size();
    std::deque<Item> kept;
    for (Item& item : c->queue) {
      if (item.tracked && samePartition(item.msg.position, tp)) {
        m.buffered_bytes -= item.bytes();
        m.release(item.msg);
      } else {
        kept.push_back(std::move(item));
      }
    }
    const std::size_t dropped = before - kept.size();
    c->queue = std::move(kept);
    m.queued -= dropped;
    m.scheduler.dropBacklog(c->sid, dropped);
  }
  for (auto it = m.retries.begin(); it != m.retries.end();) {
    if (it->second.second.tracked && samePartition(it->second.second.msg.position, tp)) {
      m.buffered_bytes -= it->second.second.bytes();
      m.release(it->second.second.msg);
      --it->second.first->retrying;
      it = m.retries.erase(it);
    } else {
      ++it;
    }
  }
  std::erase_if(m.to_park, [&](std::pair<Impl::Campaign*, Item>& e) {
    if (!e.second.tracked || !samePartition(e.second.msg.position, tp)) return false;
    m.buffered_bytes -= e.second.bytes();
    m.release(e.second.msg);
    --e.first->to_park;
    return true;
  });
  m.skip.erase(tp);
  m.tracker.revoke(tp.topic, tp.partition);
}

void WorkerCore::offer(RawMessage raw, MonoTime now) {
  Impl& m = *impl_;
  m.now = now;
  ++m.totals.read;
  const Position pos = raw.position;
  if (!m.tracker.add(pos.topic, pos.partition, pos.offset)) {
    // Read again below what was read before (a seek): start the partition over.
    m.tracker.revoke(pos.topic, pos.partition);
    m.tracker.add(pos.topic, pos.partition, pos.offset);
  }
  auto sk = m.skip.find(TopicPartition{pos.topic, pos.partition});
  if (sk != m.skip.end() && std::binary_search(sk->second.begin(), sk->second.end(), pos.offset)) {
    ++m.totals.skipped_finished;
    m.tracker.finish(pos.topic, pos.partition, pos.offset);
    return;
  }
  if (!m.rows_since && !m.rows.empty()) m.rows_since = now;
  Decoded d = decodeMessage(std::move(raw), m.options.decode);
  auto reject = [&](std::string campaign, std::string id, std::string reason, DeliveryStatus status,
                    Impl::Campaign* c) {
    DeliveryRecord r;
    r.message_id = std::move(id);
    r.campaign = std::move(campaign);
    r.topic = pos.topic;
    r.partition = pos.partition;
    r.offset = pos.offset;
    r.status = status;
    r.attempts = 0;
    r.reason = std::move(reason);
    m.pushRow(std::move(r), true);
    m.count(c, status);
  };
  if (!d.message) {
    // The key may be anything here: the row names no campaign.
    reject("", std::move(d.id), std::move(d.reason), DeliveryStatus::kRejected, nullptr);
    return;
  }
  Message& msg = *d.message;
  auto it = m.campaigns.find(msg.campaign);
  if (it == m.campaigns.end()) {
    reject(msg.campaign, msg.id, fmt::format("unknown campaign '{}'", msg.campaign), DeliveryStatus::kRejected,
           nullptr);
    return;
  }
  Impl::Campaign* c = it->second.get();
  switch (c->info.state) {
    case CampaignState::kCancelled: reject(msg.campaign, msg.id, "cancelled", DeliveryStatus::kFailed, c); return;
    case CampaignState::kCompleted:
      reject(msg.campaign, msg.id, fmt::format("campaign '{}' is completed", msg.campaign), DeliveryStatus::kRejected,
             c);
      return;
    case CampaignState::kActive:
    case CampaignState::kPaused: break;
  }
  if (m.clashes(msg)) {
    // Sent under the same id, the provider would take it for the first (an
    // idempotency key seen before): it gets its own row instead.
    DeliveryRecord r;
    r.message_id = msg.id;
    r.campaign = msg.campaign;
    r.topic = pos.topic;
    r.partition = pos.partition;
    r.offset = pos.offset;
    r.fingerprint = msg.fingerprint;
    const std::string key = reusedIdKey(r);
    reject(msg.campaign, key,
           fmt::format("message id '{}' already names another message this worker holds; not sent", msg.id),
           DeliveryStatus::kRejected, c);
    m.rows.back().fingerprint = msg.fingerprint;
    return;
  }
  Item item;
  item.msg = std::move(msg);
  m.hold(item.msg);
  m.route(c, std::move(item), now);
}

bool WorkerCore::wantsMore() const noexcept { return impl_->belowBounds(); }

bool WorkerCore::mayResume() const noexcept {
  const Impl& m = *impl_;
  return m.bufferedMessages() < m.options.max_buffered_messages / 4 * 3 &&
         m.buffered_bytes < m.options.max_buffered_bytes / 4 * 3;
}

void WorkerCore::step(MonoTime now) {
  Impl& m = *impl_;
  m.now = now;
  m.results.clear();
  m.sink.poll(m.results);
  for (const SendResult& r : m.results) m.handle(r, now);
  if (m.draining) {
    if (m.parking && !m.to_park.empty() && now >= m.park_retry_at) m.writeParking(now);
    if (!m.rows.empty() && !m.rows_since) m.rows_since = now;
    if (m.ledgerDue(now, false)) m.writeRows(now);
    return;
  }
  m.releaseRetries(now);
  m.providerPauses(now);
  // Sending first, at `now`: the store's I/O below (parking, scans, claims)
  // can take a while, and a tick that ran after it on the same `now` would
  // spend tokens later than they fall due.
  bool blocked = false;
  m.dispatch(now, blocked);
  if (m.parking) {
    const bool park_due = !m.to_park.empty() && now >= m.park_retry_at &&
                          (m.to_park.size() >= m.options.ledger_batch || !m.belowBounds() ||
                           now - m.to_park_since >= m.options.ledger_flush_interval);
    if (park_due) m.writeParking(now);
    if (now >= m.next_scan) {
      m.next_scan = now + m.options.unclaimed_scan_interval;
      try {
        for (const auto& [campaign, n] : m.parking->unclaimed()) {
          auto it = m.campaigns.find(campaign);
          if (it == m.campaigns.end()) continue;  // left parked until the campaign is known
          Impl::Campaign* c = it->second.get();
          c->parked_waiting = std::max(c->parked_waiting, n);
          m.with_parked.insert(c);
        }
      } catch (const std::runtime_error&) {
        ++m.totals.ledger_errors;
      }
    }
    if (now >= m.next_renew) {
      m.next_renew = now + m.options.renew_interval;
      try {
        m.parking->renew();
      } catch (const std::runtime_error&) {
        ++m.totals.ledger_errors;
      }
    }
    if (!m.with_parked.empty()) m.claimBack(now);
  }
  // Stdout and null sinks finish at submit: take their results in the same step.
  m.results.clear();
  m.sink.poll(m.results);
  for (const SendResult& r : m.results) m.handle(r, now);
  if (!m.rows.empty() && !m.rows_since) m.rows_since = now;
  if (m.ledgerDue(now, blocked)) m.writeRows(now);
}

bool WorkerCore::flush(MonoTime now) {
  Impl& m = *impl_;
  bool ok = true;
  if (m.parking) ok = m.writeParking(now) && ok;
  ok = m.writeRows(now) && ok;
  return ok;
}

void WorkerCore::drain() { impl_->draining = true; }

std::size_t WorkerCore::releaseParked() {
  Impl& m = *impl_;
  if (!m.parking) return 0;
  try {
    return m.parking->release();
  } catch (const std::runtime_error&) {
    ++m.totals.ledger_errors;
    return 0;
  }
}

std::vector<PartitionCommit> WorkerCore::commits() const { return impl_->tracker.commits(); }

std::optional<std::int64_t> WorkerCore::committable(const TopicPartition& tp) const {
  return impl_->tracker.committable(tp.topic, tp.partition);
}

MonoTime WorkerCore::nextWake(MonoTime now, Nanos max) const {
  const Impl& m = *impl_;
  MonoTime wake = now + max;
  if (!m.retries.empty()) wake = std::min(wake, m.retries.begin()->first);
  if (!m.rows.empty())
    wake = std::min(wake, std::max(m.ledger_retry_at, m.rows_since.value_or(now) + m.options.ledger_flush_interval));
  return std::max(wake, now);
}

bool WorkerCore::idle() const noexcept {
  const Impl& m = *impl_;
  return m.queued == 0 && m.inflight.empty() && m.rows.empty() && m.to_park.empty() && m.retries.empty() &&
         m.with_parked.empty();
}

WorkerStats WorkerCore::stats() const {
  WorkerStats s = impl_->totals;
  s.buffered_messages = impl_->bufferedMessages();
  s.buffered_bytes = impl_->buffered_bytes;
  s.unrecorded = impl_->unrecorded();
  s.pending_rows = impl_->rows.size();
  if (!impl_->rows.empty()) s.oldest_pending_row = impl_->rows_since.value_or(impl_->now);
  s.store_failing = impl_->ledger_failing || impl_->parking_failing;
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
    s.circuit_open = p->breaker && p->breaker->isOpen(now);
    if (impl_->leaser && p->qid != UINT32_MAX) {
      s.degraded = impl_->leaser->degraded(p->qid);
      s.circuit_open = impl_->leaser->circuitOpen(p->qid);
      s.workers = impl_->leaser->workersFor(p->qid);
    }
    s.server_errors = p->server_errors;
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const ProviderStats& a, const ProviderStats& b) { return a.id < b.id; });
  return out;
}

std::vector<CampaignStats> WorkerCore::campaignStats() const {
  std::vector<CampaignStats> out;
  for (const auto& [id, c] : impl_->campaigns) {
    CampaignStats s = c->stats;
    s.queued = c->queue.size();
    s.provider = c->info.provider;
    s.limit = c->info.limit;
    s.in_flight = c->in_flight;
    s.retrying = c->retrying;
    s.to_park = c->to_park;
    s.parked_waiting = c->parked_waiting;
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const CampaignStats& a, const CampaignStats& b) { return a.id < b.id; });
  return out;
}

}  // namespace pacer
