// WorkerCore's public calls (include/pacer/worker.h); its state and steps
// are in worker_core_impl.h.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "pacer/validation.h"
#include "worker_core_impl.h"

namespace pacer {

using delivery_detail::Item;
using delivery_detail::samePartition;

namespace {

// How soon the loop looks again for what a park or ledger writer finished.
constexpr Nanos kWriterPoll = std::chrono::milliseconds(2);

std::optional<std::string> limitProblem(const char* rate_name, const std::optional<RateLimit>& limit) {
  if (!limit) return std::nullopt;
  if (auto why = validation::rateProblem(rate_name, limit->rate_per_s)) return why;
  return validation::burstProblem("burst", limit->burst);
}

}  // namespace

std::optional<std::string> rowProblem(const CampaignInfo& c) {
  if (auto p = limitProblem("send_rate", c.limit)) return p;
  if (auto why = validation::weightProblem("weight", c.weight)) return why;
  if (c.default_ttl_ms != 0)
    if (auto why = validation::ttlProblem("default_ttl_ms", c.default_ttl_ms)) return why;
  if (!c.quiet_hours.empty()) {
    QuietWindowParse q = parseQuietWindow(c.quiet_hours);
    if (!q.window) return std::move(q.error);
  }
  return std::nullopt;
}

std::optional<std::string> rowProblem(const ProviderInfo& p) { return limitProblem("rate", p.limit); }

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
  p.refused.clear();
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

std::uint32_t priorityRank(const WorkerOptions& options, const std::string& name) {
  const std::string& want = name.empty() ? options.default_class : name;
  const auto& classes = options.priority_classes;
  for (std::size_t i = 0; i < classes.size() && i < kMaxPriorityRanks; ++i)
    if (classes[i] == want) return static_cast<std::uint32_t>(i);
  throw InvalidError(fmt::format("priority_class '{}' is not a configured class ({})", want, fmt::join(classes, ", ")));
}

WorkerCore::Impl::Campaign* WorkerCore::Impl::upsertOne(const std::string& key, const CampaignInfo& info,
                                                        std::uint32_t rank, MonoTime now) {
  Impl& m = *this;
  auto it = m.campaigns.find(key);
  if (it == m.campaigns.end()) {
    auto c = std::make_unique<Impl::Campaign>();
    c->info = info;
    c->stats.id = info.id;
    c->stats.priority_class = m.gate.setRules(c->rules, c->info);
    m.setRoutes(c.get(), info, now);
    c->provider = m.provider(info.provider, now);
    c->sid = m.registerCampaign(info, c->provider, now);
    if (m.by_sid.size() <= c->sid) m.by_sid.resize(c->sid + 1, nullptr);
    m.by_sid[c->sid] = c.get();
    c->queue.attach(m.scheduler, c->sid);
    if (c->provider) c->provider->campaigns.push_back(c.get());
    Impl::Campaign* raw = c.get();
    m.campaigns.emplace(key, std::move(c));
    m.applyPause(raw);
    return raw;
  }
  Impl::Campaign* c = it->second.get();
  m.setRoutes(c, info, now);
  std::string route_reason;
  Impl::Provider* const to = m.chooseRoute(c, now, route_reason);
  c->route_reason = route_reason;
  if (to != c->provider) {
    m.moveCampaign(c, to, info, now);
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
    if (m.scheduler.priorityOf(c->sid) != rank) {
      if (m.leaser)
        m.leaser->setCampaignPriority(c->sid, rank);
      else
        m.scheduler.setPriority(c->sid, rank);
    }
  }
  // Cancelled, or completed (its total is in the ledger, so what is still
  // queued here is beyond the total the operator gave): what is held gets a
  // row with the reason, never a stall.
  const char* closed_now = info.state != c->info.state ? closedReason(info.state) : nullptr;
  c->info = info;
  c->stats.priority_class = m.gate.setRules(c->rules, c->info);
  c->held = false;
  c->refused.clear();
  m.applyPause(c);
  if (closed_now) {
    m.failQueued(c, closed_now);
    if (c->parked_waiting > 0 || !c->park_wakes.empty()) m.with_parked.insert(c);
    c->next_claim = now;  // not at the next wake time
  }
  return c;
}

void WorkerCore::holdCampaign(const std::string& id, const std::string& reason, MonoTime now) {
  Impl& m = *impl_;
  if (auto it = m.campaigns.find(id); it != m.campaigns.end()) {
    if (it->second->held) it->second->refused = reason;
    return;  // the last good version stays in force
  }
  CampaignInfo info;
  info.id = id;
  info.state = CampaignState::kPaused;
  upsertCampaign(info, now);
  Impl::Campaign* c = m.campaigns.at(id).get();
  c->held = true;
  c->refused = reason;
  m.applyPause(c);
}

void WorkerCore::holdProvider(const std::string& id, const std::string& reason, MonoTime now) {
  Impl& m = *impl_;
  auto it = m.providers.find(id);
  // A good version known: it stays in force. Otherwise (never heard of, or
  // only named by a campaign): a rate of 0 until a good row arrives, so that
  // nothing goes out unlimited.
  if (it != m.providers.end() && it->second->from_row) return;
  upsertProvider(ProviderInfo{id, RateLimit{0, 1}}, now);
  Impl::Provider& p = *m.providers.at(id);
  p.from_row = false;
  p.refused = reason;
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
  // Let go (the new owner reads them again and asks the caps again: what
  // was counted here is given back).
  const auto let_go = [&](Impl::Campaign* c, Item& item) {
    if (!item.tracked || !samePartition(item.msg.position, tp)) return false;
    m.gate.giveBack(item, c->rules);
    m.release(item.msg);
    return true;
  };
  for (auto& entry : m.campaigns) {
    Impl::Campaign* c = entry.second.get();  // not a structured binding: lambdas capture it (Clang)
    m.gate.dropHeld(c, [&](Item& item) { return let_go(c, item); });
    if (c->queue.empty()) continue;
    m.queued -= c->queue.removeIf([&](Item& item) {
      if (!let_go(c, item)) return false;
      m.buffered_bytes -= item.bytes();
      return true;
    });
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
  m.to_park.removeIf([&](Impl::Campaign* c, Item& item) {
    if (!item.tracked || !samePartition(item.msg.position, tp)) return false;
    m.buffered_bytes -= item.bytes();
    m.release(item.msg);
    --c->to_park;
    if (item.park_in_doubt) --c->park_in_doubt;
    return true;
  });
  m.skip.erase(tp);
  m.parking_reads.erase(tp);
  m.tracker.revoke(tp.topic, tp.partition);
  // What is in the sink now is let go when it comes back for a retry.
  ++m.revokes;
  const auto at = std::find_if(m.revoked_at.begin(), m.revoked_at.end(), [&](const auto& e) { return e.first == tp; });
  if (at != m.revoked_at.end())
    at->second = m.revokes;
  else
    m.revoked_at.emplace_back(tp, m.revokes);
}

bool WorkerCore::Impl::staleAfterRevoke(const Item& item) const {
  if (!item.tracked || revokes <= item.read_after) return false;  // no revoke since it was read
  for (const auto& [tp, at] : revoked_at)
    if (samePartition(item.msg.position, tp)) return at > item.read_after;
  return false;
}

namespace {

// Why a campaign in this state takes no new message; nullopt when it does.
std::optional<std::pair<DeliveryStatus, std::string>> refusalByState(const CampaignInfo& info) {
  switch (info.state) {
    case CampaignState::kCancelled: return std::pair{DeliveryStatus::kFailed, std::string("cancelled")};
    case CampaignState::kCompleted:
      return std::pair{DeliveryStatus::kRejected, fmt::format("campaign '{}' is completed", info.id)};
    case CampaignState::kActive:
    case CampaignState::kPaused: break;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> WorkerCore::Impl::refusedRow(const Campaign& c) const {
  if (c.held && !c.refused.empty())
    return fmt::format("campaign '{}' is skipped: its row is invalid: {} (fix the row and send the message again)",
                       c.info.id, c.refused);
  if (c.provider && !c.provider->refused.empty())
    return fmt::format("provider '{}' is skipped: its row is invalid: {} (fix the row and send the message again)",
                       c.provider->info.id, c.provider->refused);
  return std::nullopt;
}

void WorkerCore::Impl::rejectRow(const Position& pos, std::string campaign, std::string id, std::string reason,
                                 DeliveryStatus status, Campaign* c) {
  DeliveryRecord r;
  r.message_id = std::move(id);
  r.campaign = std::move(campaign);
  r.topic = pos.topic;
  r.partition = pos.partition;
  r.offset = pos.offset;
  r.status = status;
  r.attempts = 0;
  r.reason = std::move(reason);
  to_ledger.push(std::move(r), true);
  count(c, status);
}

// True (and the offset finished) when the ledger already holds this message.
bool WorkerCore::Impl::skipFinished(const Position& pos) {
  if (!tracker.add(pos.topic, pos.partition, pos.offset)) {
    // Read again below what was read before (a seek): start the partition over.
    tracker.revoke(pos.topic, pos.partition);
    tracker.add(pos.topic, pos.partition, pos.offset);
  }
  auto sk = skip.find(TopicPartition{pos.topic, pos.partition});
  if (sk == skip.end() || !std::binary_search(sk->second.begin(), sk->second.end(), pos.offset)) return false;
  ++totals.skipped_finished;
  tracker.finish(pos.topic, pos.partition, pos.offset);
  return true;
}

void WorkerCore::offer(RawMessage raw, MonoTime now) {
  Impl& m = *impl_;
  m.now = now;
  ++m.totals.read;
  const Position pos = raw.position;
  if (m.skipFinished(pos)) return;
  m.to_ledger.markRows(now);
  Decoded d = decodeMessage(std::move(raw), m.options.decode);
  if (!d.message) {
    // The key may be anything here: the row names no campaign.
    m.rejectRow(pos, "", std::move(d.id), std::move(d.reason), DeliveryStatus::kRejected, nullptr);
    return;
  }
  Message& msg = *d.message;
  auto it = m.campaigns.find(msg.campaign);
  if (it == m.campaigns.end() || it->second->parent) {  // a lane's key is no campaign id
    m.rejectRow(pos, msg.campaign, msg.id, fmt::format("unknown campaign '{}'", msg.campaign),
                DeliveryStatus::kRejected, nullptr);
    return;
  }
  Impl::Campaign* c = it->second.get();
  if (auto refusal = refusalByState(c->info)) {
    m.rejectRow(pos, msg.campaign, msg.id, std::move(refusal->second), refusal->first, c);
    return;
  }
  if (auto refused = m.refusedRow(*c)) {
    m.rejectRow(pos, msg.campaign, msg.id, std::move(*refused), DeliveryStatus::kRejected, c);
    return;
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
    m.rejectRow(pos, msg.campaign, reusedIdKey(r),
                fmt::format("message id '{}' already names another message this worker holds; not sent", msg.id),
                DeliveryStatus::kRejected, c);
    m.to_ledger.last().fingerprint = msg.fingerprint;
    return;
  }
  MessageCost cost = m.costOf(c, msg);
  if (cost.units == 0) {
    m.rejectRow(pos, msg.campaign, msg.id, std::move(cost.error), DeliveryStatus::kRejected, c);
    return;
  }
  Item item;
  item.msg = std::move(msg);
  item.cost = cost.units;
  item.read_after = m.revokes;
  m.applyTtl(c, item, now);
  m.hold(item.msg);
  const std::size_t parked_before = m.to_park.size();
  m.admit(c, std::move(item), now);
  m.noteRead(pos, m.to_park.size() > parked_before);
}

void WorkerCore::Impl::noteRead(const Position& pos, bool parked) {
  if (!parked && parking_reads.empty()) return;  // the usual case: nothing parks
  TopicPartition tp{pos.topic, pos.partition};
  if (parked)
    parking_reads.insert(std::move(tp));
  else
    parking_reads.erase(tp);
}

bool WorkerCore::wantsMore() const noexcept { return impl_->belowBounds(); }

bool WorkerCore::mayResume() const noexcept {
  const Impl& m = *impl_;
  return m.bufferedMessages() < m.options.max_buffered_messages / 4 * 3 &&
         m.buffered_bytes < m.options.max_buffered_bytes / 4 * 3;
}

bool WorkerCore::belowCeiling() const noexcept {
  const Impl& m = *impl_;
  return m.bufferedMessages() < m.options.max_buffered_messages / 4 * 5 &&
         m.buffered_bytes < m.options.max_buffered_bytes / 4 * 5;
}

bool WorkerCore::readsPark(const TopicPartition& tp) const { return impl_->parking_reads.contains(tp); }

void WorkerCore::step(MonoTime now) {
  Impl& m = *impl_;
  m.now = now;
  m.results.clear();
  m.sink.poll(m.results);
  for (const SendResult& r : m.results) m.handle(r, now);
  m.collectLedger(now);  // before dispatch: rows now durable no longer count against max_unrecorded
  if (m.draining) {
    if (m.parking) {
      m.collectParked(now);
      if (!m.to_park.empty() && now >= m.park_retry_at && m.park_sent.empty()) m.writeParking(now);
    }
    m.sink.pollReceipts(m.to_ledger.receipts());
    m.gate.flushGiveBacks(now);
    m.to_ledger.mark(now);
    m.stepLedger(now, false);
    return;
  }
  m.expireHeld(now);  // before releasing retries and the tick: an expired message is granted nothing
  m.releaseRetries(now);
  m.providerPauses(now);
  m.followRoutes(now);
  m.gate.releaseWaiting(now);
  m.gate.checkCaps(now);  // before the tick: only cleared messages are its backlog
  // Sending first, at `now`: the store's I/O below (parking, scans, claims)
  // can take a while, and a tick that ran after it on the same `now` would
  // spend tokens later than they fall due.
  bool blocked = false;
  m.dispatch(now, blocked);
  if (m.parking) m.stepParking(now);
  // Stdout and null sinks finish at submit: take their results in the same step.
  m.results.clear();
  m.sink.poll(m.results);
  for (const SendResult& r : m.results) m.handle(r, now);
  m.sink.pollReceipts(m.to_ledger.receipts());
  m.gate.flushGiveBacks(now);
  m.to_ledger.mark(now);
  m.stepLedger(now, blocked);
}

bool WorkerCore::flush(MonoTime now) {
  Impl& m = *impl_;
  bool ok = true;
  if (m.parking) ok = m.flushParking(now) && ok;
  ok = m.flushLedger(now) && ok;
  return ok;
}

void WorkerCore::drain() { impl_->draining = true; }

std::size_t WorkerCore::releaseParked() {
  Impl& m = *impl_;
  if (!m.parking) return 0;
  // A claim still with the park writer would take rows after they were given back.
  if (m.options.park_writer && (!m.claims_sent.empty() || m.renewals_sent > 0)) m.options.park_writer->wait();
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
  if (m.with_deadlines && m.bufferedMessages() > 0) wake = std::min(wake, m.next_expiry_scan);
  if (const auto due = m.gate.nextDue()) wake = std::min(wake, m.monoAt(*due));
  // Receipts too: the provider waits for their acknowledgement, which comes
  // only once they are written.
  if (const auto due = m.to_ledger.wake(now, m.options.ledger_flush_interval)) wake = std::min(wake, *due);
  // A park or ledger writer's answers are collected by step(): soon, not at the next
  // timeout (the offsets, and the memory bound, wait for them).
  if (!m.park_sent.empty() || !m.claims_sent.empty() || m.renewals_sent > 0 || m.scan_asked || m.to_ledger.inFlight())
    wake = std::min(wake, now + kWriterPoll);
  const bool park_room = !m.options.park_writer || m.park_sent.size() < m.options.park_batches_in_flight;
  if (!m.to_park.empty() && park_room)
    wake = std::min(wake, std::max(m.park_retry_at, m.to_park_since + m.options.ledger_flush_interval));
  return std::max(wake, now);
}

bool WorkerCore::idle() const noexcept {
  const Impl& m = *impl_;
  return m.queued == 0 && m.inflight.empty() && m.to_ledger.rows() == 0 && m.to_park.empty() && m.park_sent.empty() &&
         m.claims_sent.empty() && m.retries.empty() && m.with_parked.empty() && m.gate.unchecked() == 0 && m.gate.waiting() == 0;
}

}  // namespace pacer
