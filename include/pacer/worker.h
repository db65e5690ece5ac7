// The worker core: everything pacerd does between reading a Kafka record and
// committing its offset, without the I/O. It decodes records, queues them per
// campaign, lets the scheduler share each tick, hands granted messages to the
// sink, turns sink results into retries or ledger rows, writes the ledger in
// batches, parks the excess of slow campaigns in durable storage, and says
// which offsets may be committed: only those below which every message has a
// durable outcome (a ledger row, or a parked copy).
//
// Pure in the house sense: it reads no clock (time is an argument) and does
// its I/O only through the interfaces it is handed (ledger, parking, sink),
// so tests drive it with fakes and a simulated clock. The adapters (Kafka
// consumer, PostgreSQL) live in src/adapters, wired by src/programs/daemon.
//
// Thread-safety: none; one loop thread owns a WorkerCore.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pacer/adaptive_rate.h"
#include "pacer/campaign_rules.h"
#include "pacer/circuit_breaker.h"
#include "pacer/dead_token_guard.h"
#include "pacer/prefix_routes.h"
#include "pacer/frequency_cap.h"
#include "pacer/campaign_state.h"
#include "pacer/ledger.h"
#include "pacer/message.h"
#include "pacer/message_cost.h"
#include "pacer/offset_tracker.h"
#include "pacer/parking.h"
#include "pacer/quiet_hours.h"
#include "pacer/quota.h"
#include "pacer/quota_lease.h"
#include "pacer/rate_limiter.h"
#include "pacer/retry.h"
#include "pacer/route_status.h"
#include "pacer/throttle_judge.h"
#include "pacer/scheduler.h"
#include "pacer/sink.h"
#include "pacer/time.h"
#include "pacer/wall_time.h"

namespace pacer {

// A campaign as configured (the campaigns table).
struct CampaignInfo {
  std::string id;
  std::optional<RateLimit> limit;  // send_rate and burst; nullopt = unlimited
  double weight = 1.0;
  std::string provider;  // empty: none
  // Failover (docs/routes.md): the providers after `provider`, in order, that
  // take the campaign's traffic while the ones before them are unusable
  // (circuit breaker open, or reported down: WorkerCore::setProviderDown).
  // Each must have the protocol family of `provider` (WorkerOptions::family_of);
  // at most kMaxFailoverProviders, no duplicates, none equal to `provider`.
  std::vector<std::string> failover;
  // Prefix routes (docs/routes.md): a recipient whose number starts with a
  // route's prefix (longest wins) goes through that route's provider, every
  // other one through `provider`. Each route, the default one included,
  // fails over to `failover` (in order, without the route's own provider)
  // while its provider is unusable. Each route's
  // provider must have the protocol family of `provider`; checked by
  // prefixRoutesProblem. The campaign's rate and burst are split evenly among
  // its lanes (`provider` and each other provider named), so the campaign as
  // a whole stays within them.
  std::vector<PrefixRoute> routes;
  CampaignState state = CampaignState::kActive;
  // Priority and recipient rules (campaign_rules.h, docs/recipient-rules.md).
  std::string priority_class;  // a configured class; empty: the default class
  std::string quiet_hours;     // local window, "21:00-08:00"; empty: none
  std::string time_zone;       // IANA zone for messages without a `tz` header; empty: none
  std::optional<FrequencyCapRule> frequency_cap;  // per recipient, scope "campaign:<id>"; nullopt: none
  CapPolicy cap_policy = CapPolicy::kSuppress;    // when this campaign's own cap refuses (a class cap: caps.policy)
  // A message's lifetime from when it is read, milliseconds; 0: none. A
  // message's own deadline (pacer-expires-at) wins when it is earlier.
  std::int64_t default_ttl_ms = 0;
  // The row names a callback URL (docs/callbacks.md). The core ignores it;
  // pacerd leaves the callbacks' CTE out of the ledger statement while no
  // campaign has one. The URL itself is read with each callback batch.
  bool has_callback = false;
};

// A provider as configured (the providers table).
struct ProviderInfo {
  std::string id;
  std::optional<RateLimit> limit;  // the ceiling; nullopt = unlimited
};

// Why a row cannot be used ("send_rate 1e-300 is below the smallest rate,
// 0.001 per second"), or nullopt when it can: the bounds of
// pacer/validation.h. Pure.
std::optional<std::string> rowProblem(const CampaignInfo& campaign);
std::optional<std::string> rowProblem(const ProviderInfo& provider);

// A row of the campaigns or providers table that was skipped, and why.
struct RowProblem {
  std::string kind;  // "campaign" or "provider"
  std::string id;
  std::string reason;
};

struct WorkerOptions {
  DecodeOptions decode;
  SchedulerOptions scheduler;
  RetryPolicy retry;
  // How a provider's rate adapts below its configured rate (the ceiling) on
  // 429/503: `ceiling` is taken from the provider, `floor` is clipped to it.
  // Without a global quota each worker adapts on its own; with one the state
  // is shared by every worker through the quota (QuotaProviderSpec::adaptive).
  AdaptiveRateOptions adaptive;
  // How a provider's throttles are told apart: a ceiling (the rate comes
  // down to what it accepts, and the provider pauses for the longest
  // Retry-After named) or noise (only the throttled message waits and
  // retries); one judge per provider per worker (include/pacer/throttle_judge.h).
  ThrottleJudgeOptions throttle_judge;
  // Each provider's circuit breaker on the fault ratio of its answers (shared
  // by every worker through the global quota when there is one).
  BreakerOptions breaker;
  // Each provider's dead-token guard (dead_token_guard.h): while the share of
  // answers calling a token dead is abnormal, no token is marked dead and the
  // provider pauses. Per worker: each worker judges the answers it got.
  DeadTokenGuardOptions dead_token_guard;
  // Memory bound: messages and bytes held in memory (queued, waiting to be
  // parked or retried, in the sink). Above either, wantsMore() is false and
  // the consumer pauses the partitions whose reads park; at 5/4 of either
  // (belowCeiling()), all of them.
  std::size_t max_buffered_messages = 100'000;
  std::size_t max_buffered_bytes = 256u << 20;
  // Messages handed to the sink whose ledger row is not yet durable, at most.
  // This is the most a crash can send twice (replay skips what is in the ledger).
  std::size_t max_unrecorded = 10'000;
  std::size_t ledger_batch = 5'000;                              // rows per ledger write, at most
  // A row or receipt waits at most this long; so does an SMPP receipt's
  // deliver_sm_resp, which goes only once the receipt is written (keep it
  // well below the SMSC's response timeout for deliver_sm).
  Nanos ledger_flush_interval = std::chrono::milliseconds(50);
  Nanos ledger_retry_interval = std::chrono::milliseconds(500);  // after the store was unavailable
  // Ledger writes through this (not owned), one batch at a time, instead of
  // `ledger` on the caller's thread; flush() waits for it ledger_flush_wait
  // at most per call. Null: every write inline.
  LedgerWriterInterface* ledger_writer = nullptr;
  Nanos ledger_flush_wait = std::chrono::seconds(2);
  // Parking (when a ParkingInterface is given): a campaign keeps at most
  // max(park_min_keep, send_rate * park_keep_for) messages in memory; the rest
  // is parked and claimed back as the queue drains. The kept messages hold the
  // partition's commit back, so a committed offset lags by at most about
  // park_keep_for of the slowest campaign's sending.
  Nanos park_keep_for = std::chrono::seconds(10);
  std::size_t park_min_keep = 10;
  Nanos unclaimed_scan_interval = std::chrono::seconds(5);  // look for parked messages nobody holds
  Nanos renew_interval = std::chrono::seconds(20);          // keep this worker's claims
  // Park writes and unclaimed scans through this (not owned) instead of
  // `parking` on the caller's thread; claims, renewals and releases still go
  // through `parking`. Null: everything inline.
  ParkWriterInterface* park_writer = nullptr;
  std::size_t park_batches_in_flight = 2;  // batches handed to park_writer and not yet reported, at most
  std::uint64_t seed = 1;                                   // for retry jitter and the lease pause jitter
  // The global quota (not owned; null: local limits only). With it, every
  // campaign's send_rate and every provider's rate are token buckets shared
  // by all workers (include/pacer/quota_lease.h): the scheduler spends leases
  // taken from them, and a provider's pause (429/503) and adaptive rate are
  // shared too: one worker's 429 slows and pauses the provider for all.
  QuotaBackend* quota = nullptr;
  LeaseOptions lease;                                 // seed is taken from `seed`
  DegradedMode degraded = DegradedMode::kLocalShare;  // per provider, when the quota is unreachable
  QuotaObserver* quota_observer = nullptr;            // told of degraded-mode changes (not owned)
  // Quota units per message (SMS segments); null: 1 each (not owned).
  const MessageCostInterface* cost = nullptr;
  // Priority classes, highest first (at most kMaxPriorityRanks): a campaign's
  // class is served before the classes after it in this worker's scheduler
  // and, with a global quota and more than one class, at its provider's
  // shared bucket across workers (lease.priority: floor and lookaheads). A
  // campaign names one (CampaignInfo::priority_class) or gets default_class;
  // a campaign naming another is refused (upsertCampaign throws).
  std::vector<std::string> priority_classes{"critical", "transactional", "bulk"};
  std::string default_class = "bulk";

  // Recipient rules (docs/recipient-rules.md). The zones of the tz database,
  // shared read-only; null: quiet hours are unavailable, and a campaign with
  // quiet hours has its messages rejected, saying so (never sent unchecked).
  TimeZoneTablePtr zones;
  // Frequency caps (not owned). Null: the core makes an in-memory store, which
  // counts per worker only: right for tests, pacer-sim and a single worker,
  // wrong for several (each would allow `limit` per window).
  FrequencyCapStore* caps = nullptr;
  // Per priority class (scope "class:<name>"): a campaign's class (its
  // priority_class, else default_class) caps its recipients across campaigns.
  std::vector<std::pair<std::string, FrequencyCapRule>> class_caps;
  CapPolicy class_cap_policy = CapPolicy::kSuppress;  // when only the class cap refuses
  // A message that must wait (quiet hours, a deferred cap) longer than this is
  // parked with its not_before (with parking), so its offset can advance;
  // shorter waits stay in memory, at most max_waiting per campaign (beyond
  // that they are parked too). Without parking every wait is in memory and
  // counts against max_buffered_messages.
  Nanos park_wait_after = std::chrono::seconds(30);
  std::size_t max_waiting = 10'000;
  // Cap checks run ahead of the scheduler: a capped campaign keeps about
  // rate * cap_lookahead + burst (at least cap_min_batch) checked messages
  // queued, and tops up only below half of that, so one decide() per step
  // answers many messages. At most cap_batch queries per decide().
  Nanos cap_lookahead = std::chrono::milliseconds(50);
  std::size_t cap_min_batch = 16;
  std::size_t cap_batch = 2'000;
  Nanos cap_retry = std::chrono::milliseconds(200);  // wait after the store could not answer
  // How often messages held with a deadline (queued, retrying, waiting) are
  // looked over for any past it, so that a paused campaign's or provider's
  // messages get their `expired` rows without waiting to be sent. The
  // decisive check is at the moment of sending, whatever this is.
  Nanos expiry_scan_interval = std::chrono::milliseconds(250);
  // The protocol family of a provider ("smpp", "http", ...: its sink's kind),
  // for failover: a campaign may fail over only to providers of its
  // provider's family. Null: every provider is of one family.
  std::function<std::string(const std::string& provider)> family_of;
};

// The rank of the class `name` (empty: the default class) in `options`,
// or why there is none.
std::uint32_t priorityRank(const WorkerOptions& options, const std::string& name);

// A provider as this worker sees it now.
struct ProviderStats {
  std::string id;
  std::optional<double> ceiling;    // the configured rate (nullopt: unlimited)
  std::optional<double> effective;  // the adaptive rate now (shared with a global quota, as last heard)
  bool paused = false;              // paused now (its own 429, or, with a global quota, any worker's)
  std::uint64_t throttled = 0;      // 429/503 answers this worker got
  // This worker's throttle judge (include/pacer/throttle_judge.h): the share
  // of answers it takes for noise, its verdicts, and the last one.
  double throttle_noise = 0;
  std::uint64_t capacity_cuts = 0;   // throttles judged a ceiling: the rate came down to what was accepted
  std::uint64_t noise_verdicts = 0;  // cuts taken back: the throttles did not fall with the rate
  ThrottleVerdict last_verdict;      // kind kNone until the first verdict
  std::uint64_t server_errors = 0;  // 5xx answers this worker got (whether retried as a fault or a throttle)
  bool degraded = false;            // with a global quota: the quota does not answer for it (degraded mode)
  bool circuit_open = false;        // its circuit breaker is open (sustained faults)
  std::uint32_t workers = 1;        // with a global quota: workers sharing it, as last heard
  std::uint64_t recipient_throttled = 0;  // throttles of one recipient only (APNs TooManyRequests): no pause
  // Its dead-token guard, this worker's (DeadTokenGuard).
  bool dead_token_guard = false;         // holding now: no token is marked dead, the provider pauses
  double dead_token_ratio = 0;           // share of the answers in the guard's window that call a token dead
  std::uint64_t dead_token_answers = 0;  // answers in that window
  std::uint64_t dead_token_trips = 0;    // times the guard started holding
  std::uint64_t dead_tokens_held = 0;    // dead verdicts held (failed rows instead of invalid_token)
};

// Counters since start, for logs, the demo summary and tests.
struct CampaignStats {
  std::string id;
  std::uint64_t sent = 0;
  std::uint64_t failed = 0;
  std::uint64_t rejected = 0;
  std::uint64_t invalid_tokens = 0;  // `invalid_token` rows: the recipient's push token is dead
  std::uint64_t suppressed = 0;      // `suppressed` rows: a frequency cap refused the message
  std::uint64_t expired = 0;         // `expired` rows: the message's deadline passed before it could go
  std::uint64_t deferred = 0;        // messages a frequency cap made wait (policy defer, or the cap store down)
  std::size_t quiet_waiting = 0;     // gauge: messages waiting for the recipient's quiet hours to end
  std::size_t cap_waiting = 0;       // gauge: messages in memory waiting for a deferred frequency cap
  std::string priority_class;        // its class as configured; empty: the default class
  std::uint64_t retries = 0;
  std::uint64_t parked = 0;                       // messages parked
  std::uint64_t unparked = 0;                     // messages claimed back
  std::size_t queued = 0;                         // in memory now
  std::optional<MonoTime> first_sent, last_sent;  // steps that recorded the first and the last `sent`
  // As configured now, and where its messages are now (gauges, for metrics).
  std::string provider;            // empty: none
  std::optional<RateLimit> limit;  // send_rate and burst; nullopt = unlimited
  std::size_t in_flight = 0;       // in the sink
  std::size_t retrying = 0;        // waiting for a retry (backoff or a provider's pause)
  std::size_t to_park = 0;         // waiting to be written to parking
  std::size_t parked_waiting = 0;  // parked by this worker or found unclaimed, not yet claimed back (an estimate)
  // Failover (docs/routes.md): the provider taking its traffic now (its
  // `provider` unless it fails over), why when it is not the first, and how
  // often the route changed.
  std::string route;
  std::string route_reason;  // "sms-a: binds failing"; empty on the first provider
  std::uint64_t route_changes = 0;
  // Every route (docs/routes.md): the default one first (`route` and
  // `route_reason` again), then each provider its prefix routes name but
  // its own, with the provider taking that route's traffic now and why.
  std::vector<RouteStatus> routes;
};

struct WorkerStats {
  std::uint64_t read = 0;              // records offered
  std::uint64_t skipped_finished = 0;  // replayed records already in the ledger
  std::uint64_t sent = 0, failed = 0, rejected = 0;
  std::uint64_t invalid_tokens = 0;  // `invalid_token` rows
  std::uint64_t suppressed = 0;      // `suppressed` rows
  std::uint64_t expired = 0;         // `expired` rows
  std::uint64_t deferred = 0;        // times a frequency cap made a message wait
  std::uint64_t cap_round_trips = 0;  // decide() and release() calls on the cap store
  std::uint64_t cap_faults = 0;       // of them, answered with a fault (kUnavailable queries)
  std::size_t waiting = 0;            // in memory until a time (quiet hours, a deferred cap)
  std::uint64_t ledger_rows = 0;    // rows the ledger took as new
  std::uint64_t ledger_writes = 0;  // batches written
  std::uint64_t ledger_errors = 0;  // failed batch writes (each retried)
  std::uint64_t parked = 0, unparked = 0;
  std::uint64_t receipts = 0;          // delivery receipts written to the ledger
  std::size_t pending_receipts = 0;    // received, not yet written (kept while the ledger is down)
  std::size_t buffered_messages = 0;
  std::size_t buffered_bytes = 0;
  std::size_t unrecorded = 0;                  // in the sink or awaiting the ledger
  std::size_t pending_rows = 0;                // outcomes known, not yet durable (pending, or in the ledger writer)
  std::optional<MonoTime> oldest_pending_row;  // the step that made the oldest of them
  bool store_failing = false;                  // the last ledger or parking write failed; retried (rows are kept)
  QuotaMetrics quota;                          // the global quota's counters (all zero without one)
};

class WorkerCore {
 public:
  // `parking` may be null: then nothing is parked and a slow campaign's
  // backlog stays in memory (up to the memory bound).
  WorkerCore(WorkerOptions options, LedgerInterface& ledger, SinkInterface& sink, ParkingInterface* parking,
             MonoTime now);
  ~WorkerCore();
  WorkerCore(const WorkerCore&) = delete;
  WorkerCore& operator=(const WorkerCore&) = delete;

  // Adds or changes a provider / campaign. A new send_rate, burst, weight,
  // priority class or state applies from the next step; what a limiter has
  // accumulated is kept. A campaign whose priority class is not configured is
  // refused with InvalidError (nothing changes).
  // A campaign set to cancelled fails its queued messages with reason
  // "cancelled"; its later messages fail the same way as they are read.
  void upsertProvider(const ProviderInfo& provider, MonoTime now);
  void upsertCampaign(const CampaignInfo& campaign, MonoTime now);
  // A row that failed its checks. What this worker knows of it stays in
  // force; one it never knew is held until a good version arrives through
  // upsertCampaign / upsertProvider, and a held provider's campaigns send
  // nothing. With a `reason` (values no worker can use: rowProblem,
  // pacer/validation.h) a held campaign's messages, and those of the
  // campaigns of a held provider, get a rejected row naming the row and
  // `reason` as they are read. With an empty one (this worker's
  // configuration refused it: a priority class it does not have) they wait
  // (queued, or parked beyond a few), never dead-lettered.
  void holdCampaign(const std::string& id, const std::string& reason, MonoTime now);
  void holdProvider(const std::string& id, const std::string& reason, MonoTime now);
  // Failover: `id` cannot take messages now (its SMPP binds fail, it has no
  // bound session, an operator disabled it), for `reason`; nullopt: it can
  // again. Campaigns naming it move to their next usable provider at the
  // next step, and back when it is usable again. Unknown ids are remembered.
  void setProviderDown(const std::string& id, std::optional<std::string> reason, MonoTime now);
  bool knowsCampaign(std::string_view id) const;
  // New retry and adaptive settings (a configuration reload): from the next
  // step on; each provider's adaptive rate keeps its state.
  void setTuning(const RetryPolicy& retry, const AdaptiveRateOptions& adaptive, MonoTime now);
  // The wall clock, for the rules about recipients (quiet hours, frequency
  // caps): at the monotonic instant `mono` it was `wall`. The core takes
  // wall(now) = wall + (now - mono), so the loop calls this each turn with
  // both clocks read together (only the daemon reads clocks). Until the first
  // call the wall clock is the Unix epoch at the core's construction.
  void setWallClock(WallTime wall, MonoTime mono) noexcept;

  // A partition was assigned. `finished` are the offsets (ascending) that the
  // ledger already holds in the range this worker will read; they are
  // skipped, not sent again.
  void assign(const TopicPartition& tp, std::vector<std::int64_t> finished);
  // A partition was revoked: its queued messages are let go (its new owner
  // reads them again). Call flush() and commit the partition's offset first.
  void revoke(const TopicPartition& tp);

  // Takes one record read from Kafka. Bad input becomes a `rejected` ledger
  // row with the reason; never throws for bad input.
  void offer(RawMessage raw, MonoTime now);
  // Whether to keep reading: below both memory bounds.
  bool wantsMore() const noexcept;
  // Whether reading, once paused for the bounds, may resume: below 3/4 of
  // both (so the consumer does not flap between pause and resume).
  bool mayResume() const noexcept;
  // Above the bounds, a partition whose messages are kept in memory (their
  // campaigns have room) may still be read, up to 5/4 of both bounds; one
  // whose last message went to parking may not. So a campaign that keeps up
  // is not starved by another's backlog that fills the bounds while it parks.
  bool belowCeiling() const noexcept;
  // The last message read from `tp` (since it was assigned) was parked.
  bool readsPark(const TopicPartition& tp) const;

  // One pass of the loop: sink results, retries, provider pauses, parking,
  // a scheduler tick and dispatch, and a ledger write when one is due.
  void step(MonoTime now);
  // Writes every pending ledger row, receipt and parked message now (before a
  // commit on revoke or shutdown). False if the store was unavailable; rows are
  // kept. With a ledger writer it hands over what is pending and waits for
  // the report, ledger_flush_wait at most: false too when the batch is still
  // being written then. Receipts, whichever call writes them, are passed to
  // the sink's receiptsRecorded() right after the ledger took them, never before.
  bool flush(MonoTime now);

  // A graceful stop: from now on step() starts no new send (no dispatch, no
  // retry, no claim from parking) and only collects what is in flight and
  // writes its rows, so that `stats().unrecorded` falls to 0. What was not
  // sent stays uncommitted in Kafka, or parked, for the next owner.
  void drain();
  // After drain() and a last flush(): gives this worker's claims on parked
  // messages back (see ParkingInterface::release). Returns how many; 0
  // without parking or when the store is unavailable (the lease then runs out).
  std::size_t releaseParked();

  // The offset to commit per partition: every message below it has a durable
  // outcome.
  std::vector<PartitionCommit> commits() const;
  std::optional<std::int64_t> committable(const TopicPartition& tp) const;

  // The earliest time step() has something to do (a retry, a token, a ledger
  // write), so the loop can sleep until then; at most `now + max`.
  MonoTime nextWake(MonoTime now, Nanos max) const;
  // Nothing queued, in flight, waiting for the ledger or for parking, and no
  // parked message this worker knows of.
  bool idle() const noexcept;

  WorkerStats stats() const;
  std::vector<CampaignStats> campaignStats() const;
  // Every provider known, sorted by id; `now` for the adaptive rate.
  std::vector<ProviderStats> providerStats(MonoTime now) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pacer
