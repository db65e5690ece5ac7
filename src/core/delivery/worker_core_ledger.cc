// WorkerCore's ledger rows and the ids it holds (worker_core_impl.h).
#include "worker_core_impl.h"

namespace pacer {

using delivery_detail::Item;

bool WorkerCore::Impl::belowBounds() const {
  return bufferedMessages() < options.max_buffered_messages && buffered_bytes < options.max_buffered_bytes;
}

std::size_t WorkerCore::Impl::keep(const Campaign& c) const {
  if (parking && c.held) return options.park_min_keep;  // waits for a good row: park the rest
  if (!parking || !c.info.limit) return SIZE_MAX;
  const double secs = std::chrono::duration<double>(options.park_keep_for).count();
  const double k = c.info.limit->rate_per_s * secs;
  return std::max<std::size_t>(options.park_min_keep, k >= 1e15 ? SIZE_MAX : static_cast<std::size_t>(k));
}

DeliveryRecord& WorkerCore::Impl::addRow(Campaign* c, const Item& item, DeliveryStatus status, int attempts,
                                         std::string reason, std::string provider_message_id) {
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
  if (!item.msg.provider.empty())
    r.provider = item.msg.provider;  // the one that carried it (failover)
  else if (c)
    r.provider = c->info.provider;
  r.provider_message_id = std::move(provider_message_id);
  if (c && status != DeliveryStatus::kSent && item.caps_counted)
    gate.giveBack(item, c->rules);  // counted, not sent: give it back
  release(item.msg);
  DeliveryRecord& row = to_ledger.push(std::move(r), item.tracked);
  count(c, status);
  return row;
}

void WorkerCore::Impl::hold(const Message& m) {
  auto [it, fresh] = held_ids.try_emplace(m.id, m.fingerprint, 0);
  ++it->second.second;
}

void WorkerCore::Impl::release(const Message& m) {
  auto it = held_ids.find(m.id);
  if (it != held_ids.end() && --it->second.second == 0) held_ids.erase(it);
}

// Another message than the one held under this id (same id, other content).
bool WorkerCore::Impl::clashes(const Message& m) const {
  auto it = held_ids.find(m.id);
  return it != held_ids.end() && it->second.first != m.fingerprint;
}

void WorkerCore::Impl::count(Campaign* c, DeliveryStatus status) {
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
    case DeliveryStatus::kInvalidToken:
      ++totals.invalid_tokens;
      if (c) ++c->stats.invalid_tokens;
      break;
    case DeliveryStatus::kSuppressed:
      ++totals.suppressed;
      if (c) ++c->stats.suppressed;
      break;
    case DeliveryStatus::kExpired:
      ++totals.expired;
      if (c) ++c->stats.expired;
      break;
  }
}

bool WorkerCore::Impl::writeRows(MonoTime now) {
  return to_ledger.write(ledger, sink, tracker, totals, now, options.ledger_retry_interval);
}

bool WorkerCore::Impl::ledgerDue(MonoTime now, bool blocked) const {
  return to_ledger.due(now, blocked, options.ledger_batch, options.ledger_flush_interval);
}

bool WorkerCore::Impl::collectLedger(MonoTime now) {
  LedgerWriterInterface* writer = options.ledger_writer;
  if (!writer || !to_ledger.inFlight()) return true;
  writer->poll(ledger_reports);
  bool ok = true;
  for (const LedgerWriteReport& report : ledger_reports) {
    if (!to_ledger.inFlight()) break;  // more reports than batches: a writer's bug, nothing to finish
    ok = to_ledger.finished(report, sink, tracker, totals, now, options.ledger_retry_interval) && ok;
  }
  return ok;
}

void WorkerCore::Impl::stepLedger(MonoTime now, bool blocked) {
  collectLedger(now);
  if (!ledgerDue(now, blocked)) return;
  if (options.ledger_writer)
    to_ledger.submit(*options.ledger_writer);  // the loop goes on; its report comes through collectLedger
  else
    writeRows(now);
}

// Before a commit (revoke, shutdown): every offset the caller may commit
// must have its row durable, so this waits for the writer, within bounds (a
// rebalance callback must return). A failed or unfinished batch is reported
// as not flushed, and the caller commits only what is finished.
bool WorkerCore::Impl::flushLedger(MonoTime now) {
  LedgerWriterInterface* writer = options.ledger_writer;
  if (!writer) return writeRows(now);
  collectLedger(now);  // one that failed before is handed over again at once, as an inline flush writes at once
  for (;;) {
    if (!to_ledger.inFlight()) {
      if (to_ledger.rows() == 0 && to_ledger.pendingReceipts() == 0) return true;
      to_ledger.submit(*writer);
    }
    const bool finished = writer->wait(options.ledger_flush_wait);
    if (!collectLedger(now)) return false;                // back in pending, tried again later
    if (!finished || to_ledger.inFlight()) return false;  // still being written: not durable yet
  }
}

}  // namespace pacer
