// WorkerCore's parking (worker_core_impl.h): the excess of a campaign that
// cannot keep up goes to durable storage, inline or through a park writer on
// another thread, and is claimed back as its queue drains.
#include "worker_core_impl.h"

namespace pacer {

using delivery_detail::Item;

namespace {
// Later than any not_before (and still a valid PostgreSQL timestamp).
const WallTime kFarFuture{std::chrono::sys_days{std::chrono::year{9999} / 1 / 1}};

// Handed to parking again: what happens to this copy decides.
template <typename Campaign>
void notInDoubt(Campaign* c, Item& item) {
  if (!item.park_in_doubt) return;
  item.park_in_doubt = false;
  --c->park_in_doubt;
}
}  // namespace

bool WorkerCore::Impl::writeParking(MonoTime now) {
  if (to_park.empty()) return true;
  if (options.park_writer) {
    // At most ledger_batch a batch: the writer holds a copy of each message
    // until it is durable, and a backlog waiting at the memory bound would
    // double what is held. Round-robin over the campaigns: one with a few
    // waiting is not put behind another's backlog. A campaign whose claim
    // waits for its batch in the writer gives it nothing new meanwhile, unless
    // some of its messages are in doubt (those go again first).
    const std::size_t n = std::max<std::size_t>(1, options.ledger_batch);
    ParkBatch batch = to_park.take(
        n, [](const Campaign* c) { return c->claim_waits && c->park_in_flight > 0 && c->park_in_doubt == 0; });
    if (batch.empty()) {
      to_park_since = now;  // looked at again when a batch is reported, or after the flush interval
      return false;
    }
    std::vector<Message> messages;
    std::vector<WallTime> times;
    messages.reserve(batch.size());
    times.reserve(batch.size());
    for (auto& [c, item] : batch) {
      notInDoubt(c, item);
      messages.push_back(item.msg);
      times.push_back(item.not_before);
      ++c->park_in_flight;
    }
    park_sent_items += batch.size();
    park_sent.push_back(std::move(batch));
    options.park_writer->submit(std::move(messages), std::move(times));
    return true;
  }
  ParkBatch batch = to_park.takeAll();
  scratch.clear();
  scratch_times.clear();
  for (auto& [c, item] : batch) {
    notInDoubt(c, item);
    scratch.push_back(item.msg);
    scratch_times.push_back(item.not_before);
  }
  try {
    parking->park(scratch, scratch_times);
  } catch (const LedgerUnavailableError&) {  // kept and retried
    backToPark(batch, now);
    parkFailed(now);
    return false;
  } catch (const LedgerRejectedError&) {
    backToPark(batch, now);
    parkFailed(now);
    return false;
  }
  parkedDurable(batch, now);
  return true;
}

void WorkerCore::Impl::backToPark(ParkBatch& failed, MonoTime now) {
  // Its commit may have succeeded with the answer lost: until it is written
  // again, a claim could take a row this batch will hand back (claimBack).
  for (auto& [c, item] : failed) {
    if (!item.park_in_doubt) ++c->park_in_doubt;
    item.park_in_doubt = true;
  }
  to_park.pushFront(failed);
  to_park_since = now;
}

void WorkerCore::Impl::parkFailed(MonoTime now) {
  ++totals.ledger_errors;
  parking_failing = true;
  park_retry_at = now + options.ledger_retry_interval;
}

// Only now may the offsets of `batch` be committed: its rows are durable.
void WorkerCore::Impl::parkedDurable(ParkBatch& batch, MonoTime now) {
  parking_failing = false;
  for (auto& [c, item] : batch) {
    if (item.tracked) tracker.finish(item.msg.position.topic, item.msg.position.partition, item.msg.position.offset);
    release(item.msg);
    buffered_bytes -= item.bytes();
    --c->to_park;
    if (item.not_before == WallTime{}) {
      ++c->parked_waiting;  // claimable at once (a claim may have been put off until a wake time)
      c->next_claim = std::min(c->next_claim, now + std::chrono::milliseconds(100));
    } else {  // park_wakes says when to claim it; an earlier wake than the one planned brings the claim forward
      c->next_claim = std::min(c->next_claim, monoAt(std::chrono::ceil<std::chrono::seconds>(item.not_before)));
    }
    ++c->stats.parked;
    ++totals.parked;
    with_parked.insert(c);
  }
  batch.clear();
}

void WorkerCore::Impl::collectParked(MonoTime now) {
  ParkWriterInterface* writer = options.park_writer;
  if (!writer || (park_sent.empty() && claims_sent.empty() && renewals_sent == 0 && !scan_asked)) return;
  writer->poll(park_report);
  ParkBatch failed;
  for (const bool durable : park_report.batches) {
    if (park_sent.empty()) break;  // more reports than batches: a writer's bug, nothing to finish
    ParkBatch batch = std::move(park_sent.front());
    park_sent.pop_front();
    park_sent_items -= batch.size();
    for (auto& [c, item] : batch) --c->park_in_flight;
    if (durable) {
      parkedDurable(batch, now);
      continue;
    }
    parkFailed(now);
    // Back to be parked again, in their order, unless their partition was
    // revoked meanwhile (its new owner reads them again).
    for (auto& e : batch) {
      if (staleAfterRevoke(e.second)) {
        buffered_bytes -= e.second.bytes();
        release(e.second.msg);
        --e.first->to_park;
      } else {
        failed.push_back(std::move(e));
      }
    }
  }
  if (!failed.empty()) backToPark(failed, now);
  for (ParkClaimAnswer& answer : park_report.claims) {
    if (claims_sent.empty()) break;  // more answers than claims: a writer's bug
    Campaign* c = claims_sent.front();
    claims_sent.pop_front();
    c->claim_in_flight = false;
    if (answer.failed) {
      claimFailed(c, now);
      continue;
    }
    if (claimed(c, answer.messages, c->claim_want, c->claim_all, now)) with_parked.erase(c);
  }
  renewals_sent -= std::min(renewals_sent, park_report.renewals);
  totals.ledger_errors += park_report.renewals_failed;
  if (park_report.unclaimed) {
    scan_asked = false;
    noteUnclaimed(*park_report.unclaimed, now);
  }
  if (park_report.unclaimed_failed) {
    scan_asked = false;
    ++totals.ledger_errors;
  }
}

void WorkerCore::Impl::noteUnclaimed(const std::vector<std::pair<std::string, std::size_t>>& counts,
                                     MonoTime now) {
  for (const auto& [campaign, n] : counts) {
    auto it = campaigns.find(campaign);
    if (it == campaigns.end()) continue;  // left parked until the campaign is known
    Campaign* c = it->second.get();
    c->parked_waiting = std::max(c->parked_waiting, n);
    c->next_claim = std::min(c->next_claim, now);  // due rows (another worker's, say): not at a wake time
    with_parked.insert(c);
  }
}

bool WorkerCore::Impl::flushParking(MonoTime now) {
  if (!options.park_writer) return writeParking(now);
  const std::size_t in_flight = std::max<std::size_t>(1, options.park_batches_in_flight);
  for (;;) {
    while (!to_park.empty() && park_sent.size() < in_flight && writeParking(now)) {
    }
    if (park_sent.empty()) break;
    options.park_writer->wait();
    collectParked(now);
    if (parking_failing) break;  // what failed is back in to_park: the caller retries
  }
  return park_sent.empty() && to_park.empty();
}

void WorkerCore::Impl::stepParking(MonoTime now) {
  collectParked(now);
  // Claims before new batches: a claim that waited for its campaign's batch
  // in the writer goes as soon as that batch is reported.
  if (!with_parked.empty()) claimBack(now);
  const std::size_t in_flight = options.park_writer ? std::max<std::size_t>(1, options.park_batches_in_flight) : 1;
  // With a writer, as many batches as it may hold (each at most ledger_batch).
  while (!to_park.empty() && now >= park_retry_at && park_sent.size() < in_flight &&
         (to_park.size() >= options.ledger_batch || !belowBounds() ||
          now - to_park_since >= options.ledger_flush_interval)) {
    if (!writeParking(now) || !options.park_writer) break;
  }
  if (now >= next_scan) {
    next_scan = now + options.unclaimed_scan_interval;
    if (options.park_writer) {
      if (!scan_asked) options.park_writer->requestUnclaimed();
      scan_asked = true;
    } else {
      try {
        noteUnclaimed(parking->unclaimed(), now);
      } catch (const std::runtime_error&) {
        ++totals.ledger_errors;
      }
    }
  }
  if (now >= next_renew) {
    next_renew = now + options.renew_interval;
    if (options.park_writer) {
      options.park_writer->requestRenew();
      ++renewals_sent;
      return;
    }
    try {
      parking->renew();
    } catch (const std::runtime_error&) {
      ++totals.ledger_errors;
    }
  }
}

void WorkerCore::Impl::claimBack(MonoTime now) {
  for (auto it = with_parked.begin(); it != with_parked.end();) {
    Campaign* c = *it;
    if (c->claim_in_flight) {  // its answer comes through the park writer
      ++it;
      continue;
    }
    const char* closed = closedReason(c->info.state);
    const bool cancelled = closed != nullptr;  // cancelled or completed: claimed to be given their rows
    const std::size_t k = keep(*c);
    const std::size_t held = c->queue.size() + c->rules.unchecked.size();  // unchecked: waiting for the cap store
    const bool room = cancelled || (c->info.state == CampaignState::kActive && held < k / 2);
    if (!room || now < c->next_claim) {
      c->claim_waits = false;
      ++it;
      continue;
    }
    // Not while a batch of its own is in the park writer or back from one that
    // failed: a batch whose commit succeeded but whose answer was lost is
    // written again, and that hands back (unowned) a row claimed meanwhile,
    // which is then sent twice. Its newer messages wait out of new batches
    // meanwhile (writeParking), so a campaign that parks without pause still
    // gets its turn; another campaign's batch does not hold it.
    if (c->park_in_flight > 0 || c->park_in_doubt > 0) {
      c->claim_waits = true;
      ++it;
      continue;
    }
    c->claim_waits = false;
    const std::size_t want = cancelled ? options.ledger_batch : std::min(k - held, options.ledger_batch);
    // A closed campaign's waiting messages get their rows now, not when due.
    const WallTime due_by = cancelled ? kFarFuture : wallAt(now);
    if (options.park_writer) {
      // On the writer's thread, ahead of the batches waiting there (none of
      // this campaign's, above): a claim of a thousand rows takes 100-250 ms
      // that the loop spends sending instead.
      options.park_writer->requestClaim(c->info.id, want, due_by);
      c->claim_in_flight = true;
      c->claim_want = want;
      c->claim_all = cancelled;
      claims_sent.push_back(c);
      ++it;
      continue;
    }
    std::vector<Message> got;
    try {
      got = parking->claim(c->info.id, want, due_by);
    } catch (const std::runtime_error&) {
      claimFailed(c, now);
      ++it;
      continue;
    }
    if (claimed(c, got, want, cancelled, now)) {
      it = with_parked.erase(it);
    } else {
      ++it;
    }
  }
}

void WorkerCore::Impl::claimFailed(Campaign* c, MonoTime now) {
  ++totals.ledger_errors;
  c->next_claim = now + options.ledger_retry_interval;
}

bool WorkerCore::Impl::claimed(Campaign* c, std::vector<Message>& got, std::size_t want, bool all, MonoTime now) {
  // Closed now (it may have closed while a claim was with the writer): its messages get their rows.
  const char* closed = closedReason(c->info.state);
  const bool cancelled = closed != nullptr;
  c->next_claim = std::max(c->next_claim, now + std::chrono::milliseconds(100));
  c->stats.unparked += got.size();
  totals.unparked += got.size();
  for (Message& m : got) {
    Item item;
    item.msg = std::move(m);
    item.msg.fingerprint = contentFingerprint(item.msg);
    item.tracked = false;
    hold(item.msg);
    MessageCost cost = cancelled ? MessageCost{} : costOf(c, item.msg);
    item.cost = cost.units;
    if (cancelled) {
      addRow(c, item, DeliveryStatus::kFailed, 0, closed);
    } else if (cost.units == 0) {
      addRow(c, item, DeliveryStatus::kRejected, 0, std::move(cost.error));
    } else {
      admit(c, std::move(item), now);  // quiet hours and caps again: it may have to wait
    }
  }
  if (got.size() >= want) {
    c->parked_waiting = c->parked_waiting > got.size() ? c->parked_waiting - got.size() : 1;
    return false;
  }
  // Nothing more is due now; what waits for a time is claimed when due.
  c->parked_waiting = 0;
  const WallTime wall = wallAt(now);
  if (all) c->park_wakes.clear();  // all claimed, due or not
  while (!c->park_wakes.empty() && *c->park_wakes.begin() <= wall) c->park_wakes.erase(c->park_wakes.begin());
  if (c->park_wakes.empty()) return true;
  c->next_claim = monoAt(*c->park_wakes.begin());
  return false;
}

}  // namespace pacer
