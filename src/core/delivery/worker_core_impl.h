// WorkerCore's state and the steps it is made of, shared by the files that
// implement it (worker_core.cc: the public calls; worker_core_ledger.cc:
// ledger rows, parking and the ids held; worker_core_send.cc: queues,
// providers, dispatch and answers). Its parts with a state of their own are
// classes of their own: the ledger batch (ledger_batch.h) and the recipient
// rules (rules_gate.h). Private to src/core/delivery.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <unordered_map>

#include "campaign_queue.h"
#include "ledger_batch.h"
#include "pacer/adaptive_rate.h"
#include "pacer/circuit_breaker.h"
#include "pacer/worker.h"
#include "park_queue.h"
#include "rules_gate.h"
#include "worker_item.h"

namespace pacer {

// Why a campaign in this state sends nothing more: its messages still held
// here get a row with this reason; nullptr while it may send.
inline const char* closedReason(CampaignState state) noexcept {
  if (state == CampaignState::kCancelled) return "cancelled";
  if (state == CampaignState::kCompleted) return "completed: beyond the campaign's total";
  return nullptr;
}

// The reason of an `expired` row: the deadline (UTC) and how late it is.
std::string expiredReason(std::int64_t expires_at_ms, std::int64_t now_ms);

struct WorkerCore::Impl {
  using Item = delivery_detail::Item;

  struct Provider;
  struct Campaign {
    CampaignInfo info;
    CampaignId sid = 0;
    Provider* provider = nullptr;                // the one taking its traffic now (routes[0] unless it fails over)
    std::vector<Provider*> routes;               // its provider, then its failover list; empty: no provider
    std::string route_reason;                    // why it is not on routes[0]; empty when it is
    // Prefix routes (worker_core_routes.cc): a lane carries its campaign's
    // messages for one route's provider, under that provider's quota, with
    // its share of the campaign's rate. A lane's parent is the campaign
    // (which carries the rest itself); a campaign's lanes are never removed
    // (answers and retries may still name them), only no longer routed to.
    Campaign* parent = nullptr;
    struct Lane {
      std::string provider;
      Campaign* lane = nullptr;
      bool routed = false;  // a route of the campaign names its provider now
    };
    std::vector<Lane> lanes;
    std::optional<RateLimit> whole_limit;        // a routed campaign's send_rate and burst before its split
    delivery_detail::CampaignQueue<Item> queue;  // and the scheduler's backlog of it
    std::size_t to_park = 0;                     // items of this campaign waiting in to_park or park_sent
    std::size_t park_in_flight = 0;              // of them, in park_sent (handed to the park writer)
    std::size_t park_in_doubt = 0;               // of them, in to_park with Item::park_in_doubt
    bool claim_waits = false;                    // a claim waits for its batch in flight: no new batch takes its messages
    bool claim_in_flight = false;                // a claim handed to the park writer, not yet answered
    std::size_t claim_want = 0;                  // ... how many it asked for
    bool claim_all = false;                      // ... whether due or not (a closed campaign's)
    std::size_t parked_waiting = 0;              // parked, not yet claimed back (an estimate)
    MonoTime next_claim{};
    bool sched_paused = false;
    bool held = false;          // its row never passed its checks
    std::string refused;        // held for its values (rowProblem): why; its messages get a row saying so
                                // (empty: held for this worker's configuration: they wait)
    std::size_t in_flight = 0;  // in the sink
    std::size_t retrying = 0;   // in `retries`
    CampaignStats stats;
    delivery_detail::CampaignRules rules;   // its recipient rules and the messages they hold (rules_gate.h)
    std::set<WallTime> park_wakes;          // when messages parked to wait fall due (rounded up to a second)
  };
  struct Provider {
    ProviderInfo info;
    ProviderId sid = kNoProvider;
    std::uint32_t qid = UINT32_MAX;  // the leaser's provider id (with a global quota)
    MonoTime paused_until{};
    bool paused = false;
    std::optional<AdaptiveRate> adaptive;   // without a global quota (with one it is shared there)
    std::optional<CircuitBreaker> breaker;  // likewise
    std::optional<ThrottleJudge> judge;     // this worker's, whether or not the quota is global
    AcceptedMeter meter;                    // its answers per second (shared: summed over workers by the quota)
    bool judging = true;                    // it judges (with a global quota, one worker does for all)
    double noise_sent = 0;                  // its noise level as last told to the global quota
    ThrottleVerdict last_verdict;           // the last verdict it acted on
    std::uint64_t capacity_cuts = 0;        // capacity verdicts it acted on (a watcher's milder ones are not)
    std::uint64_t noise_verdicts = 0;
    double applied_rate = 0;
    std::uint64_t throttled = 0;
    bool from_row = false;            // set by a good row (upsertProvider), not a placeholder
    std::string refused;              // its row's values were refused and none was ever good: why
    std::uint64_t server_errors = 0;  // answers with a 5xx status (the console plots them)
    std::uint64_t recipient_throttled = 0;      // throttles of one recipient (APNs TooManyRequests): no pause
    // The recipients throttled in the last AcceptedMeter::kRecipientWindow
    // (time, a hash of the recipient), at most kCrowdKept: enough distinct
    // ones make the throttles the provider's (crowdThrottled).
    std::deque<std::pair<MonoTime, std::size_t>> recipient_throttles;
    std::optional<DeadTokenGuard> dead_tokens;  // made at its first answer (worker_core_tokens.cc)
    std::vector<Campaign*> campaigns;
    std::optional<std::string> down;  // setProviderDown: why it cannot take messages now
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
      lo.priority.enabled = lo.priority.enabled || options.priority_classes.size() > 1;
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
  std::set<TopicPartition> parking_reads;  // partitions whose last message read was parked
  // Revokes so far, and each revoked partition's latest (its number): a
  // message read before its partition's latest revoke belongs to the new
  // owner, which reads it again (revoke() lets go of what it holds; one in
  // the sink then is let go when it comes back for a retry).
  std::uint64_t revokes = 0;
  std::vector<std::pair<TopicPartition, std::uint64_t>> revoked_at;
  bool staleAfterRevoke(const delivery_detail::Item& item) const;

  std::unordered_map<std::uint64_t, std::pair<Campaign*, Item>> inflight;
  std::uint64_t next_ticket = 1;
  std::multimap<MonoTime, std::pair<Campaign*, Item>> retries;
  // Waiting to be parked, per campaign in the order they came; a batch is
  // taken round-robin over the campaigns (park_queue.h).
  using ParkQueue = delivery_detail::ParkQueue<Campaign*, Item>;
  using ParkBatch = ParkQueue::Batch;
  ParkQueue to_park;
  // With a park writer: the batches handed to it, oldest first, not yet
  // reported durable (their offsets are not finished before that).
  std::deque<ParkBatch> park_sent;
  std::size_t park_sent_items = 0;
  bool scan_asked = false;  // a requestUnclaimed() not yet answered
  // With a park writer: the campaigns whose claims it has, in the order asked, not yet answered.
  std::deque<Campaign*> claims_sent;
  std::size_t renewals_sent = 0;  // requestRenew()s not yet answered
  ParkWriterReport park_report;
  MonoTime to_park_since{};
  MonoTime park_retry_at{};
  std::set<Campaign*> with_parked;
  MonoTime next_scan;
  MonoTime next_renew;

  delivery_detail::LedgerBatch to_ledger;  // rows and receipts not yet written (ledger_batch.h)
  std::vector<LedgerWriteReport> ledger_reports;  // the ledger writer's, as last polled
  bool parking_failing = false;            // the last park() failed

  MonoTime now{};         // of the current step or offer
  bool draining = false;  // drain(): no new sends
  std::size_t queued = 0;
  std::uint64_t queued_units = 0;       // the cost of everything queued, in quota units
  std::vector<Campaign*> refused_paid;  // a message the sink refused waits paid: tried first next dispatch
  // The last dispatch that found the sink full: for a second after it, leases
  // are held to the sink's room (dispatch()).
  std::optional<MonoTime> sink_full_at;
  std::size_t buffered_bytes = 0;
  WorkerStats totals;
  std::vector<SendResult> results;
  std::vector<Message> scratch;
  std::vector<WallTime> scratch_times;

  // --- recipient rules (rules_gate.h; worker_core_rules.cc) ----------------
  delivery_detail::WallClock clock;  // setWallClock
  // What the rules hand back: rows, the queue, parking, a new admit().
  struct RulesHost final : delivery_detail::RulesGate<Campaign>::Host {
    explicit RulesHost(Impl& impl) : m(impl) {}
    void row(Campaign* c, Item& item, DeliveryStatus status, std::string reason) override;
    void enqueue(Campaign* c, Item&& item) override;
    void park(Campaign* c, Item&& item, WallTime until, MonoTime now) override;
    void admit(Campaign* c, Item&& item, MonoTime now) override;
    Impl& m;
  };
  RulesHost rules_host{*this};
  delivery_detail::RulesGate<Campaign> gate{options, rules_host, clock, parking != nullptr, buffered_bytes, totals};

  WallTime wallAt(MonoTime t) const { return clock.wallAt(t); }
  MonoTime monoAt(WallTime w) const { return clock.monoAt(w); }
  // A message ready to go (new, claimed from parking, or done waiting): its
  // deadline, quiet hours, then route() and the cap check.
  void admit(Campaign* c, Item item, MonoTime now);
  void toPark(Campaign* c, Item item, MonoTime now);

  // --- accounting -------------------------------------------------------

  std::size_t bufferedMessages() const {
    return queued + to_park.size() + park_sent_items + retries.size() + inflight.size() + gate.unchecked() +
           gate.waiting();
  }
  std::size_t unrecorded() const { return inflight.size() + to_ledger.rows(); }
  bool belowBounds() const;

  std::size_t keep(const Campaign& c) const;

  // --- ledger rows --------------------------------------------------------

  // Returns the row, still pending, for the caller to add what only it knows.
  DeliveryRecord& addRow(Campaign* c, const Item& item, DeliveryStatus status, int attempts, std::string reason,
                         std::string provider_message_id = {});

  // --- ids held ---------------------------------------------------------------
  // The ids of the messages this worker holds (queued, in the sink, retrying,
  // waiting to be parked), with what they said, so that another message
  // reusing one of them is caught before it is sent under the same id.

  void hold(const Message& m);

  void release(const Message& m);

  bool clashes(const Message& m) const;

  void count(Campaign* c, DeliveryStatus status);

  // A dead-letter row for a message read at `pos` that will not be sent.
  void rejectRow(const Position& pos, std::string campaign, std::string id, std::string reason, DeliveryStatus status,
                 Campaign* c);

  // True (and the offset finished) when the ledger already holds the message at `pos`.
  bool skipFinished(const Position& pos);
  // Remembers whether the message just read from pos's partition was parked (readsPark()).
  void noteRead(const Position& pos, bool parked);

  // Writes what to_ledger holds (LedgerBatch::write); whether it is due.
  bool writeRows(MonoTime now);
  bool ledgerDue(MonoTime now, bool blocked) const;
  // With a ledger writer: takes its reports on the batch in flight (false
  // when it failed). Without one: nothing to do.
  bool collectLedger(MonoTime now);
  // The end of a step: the writer's report, then a write (inline) or a
  // batch handed over (to the writer) when one is due.
  void stepLedger(MonoTime now, bool blocked);
  // Writes everything pending now; with a writer, hands it over and waits
  // for the report (ledger_flush_wait at most). False unless all is durable.
  bool flushLedger(MonoTime now);

  // --- parking ------------------------------------------------------------

  // Inline: parks to_park now. With a park writer: hands a batch of at most
  // ledger_batch over (done when reported durable through collectParked);
  // false when it had nothing to hand over (every campaign waiting holds back).
  bool writeParking(MonoTime now);
  // A failed batch back in front of to_park, each message in doubt.
  void backToPark(ParkBatch& failed, MonoTime now);
  // What the park writer finished: durable batches finish their offsets,
  // failed ones go back to to_park; an unclaimed scan's answer is noted.
  void collectParked(MonoTime now);
  void parkedDurable(ParkBatch& batch, MonoTime now);
  void parkFailed(MonoTime now);
  void noteUnclaimed(const std::vector<std::pair<std::string, std::size_t>>& counts, MonoTime now);
  // Parks everything pending and waits for the park writer to finish it.
  bool flushParking(MonoTime now);

  void claimBack(MonoTime now);
  // What a claim for `c` brought back (asked for `want`; `all`: due or not):
  // admitted, or rows for a campaign closed now. True when nothing more of it
  // is due now.
  bool claimed(Campaign* c, std::vector<Message>& got, std::size_t want, bool all, MonoTime now);
  // A claim for `c` that failed: counted, and tried again after the retry interval.
  void claimFailed(Campaign* c, MonoTime now);
  // A step's parking: writes due, the unclaimed scan, renewals, claims.
  void stepParking(MonoTime now);

  // --- queues -------------------------------------------------------------

  void enqueue(Campaign* c, Item item, bool at_front);

  void route(Campaign* c, Item item, MonoTime now);

  Item take(Campaign* c);
  // What `m` costs for `c`'s provider: 1 unit without a cost model; 0 units
  // (with the reason) for a message the provider cannot take.
  MessageCost costOf(const Campaign* c, const Message& m) const;

  void failQueued(Campaign* c, const std::string& reason);
  // Why a message of `c` gets a rejected row as it is read: the campaign's
  // row, or its provider's, was refused and no good version of it is known.
  // nullopt: the message may be sent.
  std::optional<std::string> refusedRow(const Campaign& c) const;

  // --- pauses ---------------------------------------------------------------

  void applyPause(Campaign* c);

  void providerPauses(MonoTime now);

  Provider* provider(const std::string& id, MonoTime now);

  static std::string quotaName(const std::string& id);

  CampaignId registerCampaign(const CampaignInfo& info, Provider* p, MonoTime now);

  AdaptiveRateOptions adaptiveFor(double ceiling) const;

  Provider* addProvider(const ProviderInfo& info, MonoTime now);

  // --- sink results ---------------------------------------------------------

  void handle(const SendResult& answer, MonoTime now);
  // A throttle of one recipient (APNs TooManyRequests) while kCrowd distinct
  // recipients of the same provider were throttled within the last
  // AcceptedMeter::kRecipientWindow (5 s), counting those here and the
  // other workers' (the quota's sum of their AcceptedMeter, each token once
  // per window at each), is the provider's window, not a token's.
  bool crowdThrottled(Provider* p, const std::string& recipient, MonoTime now);
  static constexpr std::size_t kCrowd = 3;
  static constexpr std::size_t kCrowdKept = 64;

  void answered(Provider* p, bool fault, MonoTime now);
  void judge(Provider* p, const SendResult& r, MonoTime now);

  void slowAnswer(Provider* p, Nanos latency, MonoTime now);

  // The dead-token guard (worker_core_tokens.cc): counts a final answer of
  // `p`; true when the answer would mark its token dead and the guard holds:
  // the provider is paused and the message gets heldTokenReason() instead.
  bool deadTokenHeld(Provider* p, const SendResult& r, MonoTime now);
  std::string heldTokenReason(const Provider* p, const SendResult& r, MonoTime now) const;

  void releaseRetries(MonoTime now);

  // --- deadlines (worker_core_expiry.cc) --------------------------------
  bool with_deadlines = false;  // a message with a deadline was seen: scan for expired ones
  MonoTime next_expiry_scan{};
  // Tightens a new message's deadline with the campaign's default lifetime.
  void applyTtl(const Campaign* c, Item& item, MonoTime now);
  bool pastDeadline(const Item& item, MonoTime now) const;
  void expiredRow(Campaign* c, const Item& item, MonoTime now);
  // True (and its `expired` row made) when the item's deadline has passed.
  bool expireIfDue(Campaign* c, Item& item, MonoTime now);
  // The same for the head of c's queue, keeping its grant for the next one.
  bool expireFront(Campaign* c, MonoTime now);
  // Every held message past its deadline gets its row (at most once per
  // expiry_scan_interval).
  void expireHeld(MonoTime now);

  // --- failover (worker_core_routes.cc) -----------------------------------
  std::set<Campaign*> with_failover;  // campaigns whose routes have more than one provider
  // The campaign's providers (info.provider, then info.failover), made known.
  void setRoutes(Campaign* c, const CampaignInfo& info, MonoTime now);
  // Why `p` cannot take messages now; nullopt when it can.
  std::optional<std::string> unusable(const Provider* p, MonoTime now) const;
  // The first usable provider of c's routes (routes[0] when none is), and
  // why the ones before it were passed over.
  Provider* chooseRoute(const Campaign* c, MonoTime now, std::string& reason) const;
  // Registers `c` again under `to` (the scheduler cannot move a campaign
  // between providers). Grants already paid from the old provider's tokens
  // are forfeited, so the new provider's quota pays for every message it gets.
  void moveCampaign(Campaign* c, Provider* to, const CampaignInfo& info, MonoTime now);
  // Each step: every campaign with a failover list on its first usable provider.
  void followRoutes(MonoTime now);
  // The provider an answer or row belongs to: the one the attempt went to.
  Provider* providerOf(Campaign* c, const Item& item);

  // --- prefix routes (worker_core_routes.cc) --------------------------------
  // Creates or changes the campaign `key` (its id, or a lane's key) to `info`.
  Campaign* upsertOne(const std::string& key, const CampaignInfo& info, std::uint32_t rank, MonoTime now);
  // The campaign's lanes for its routes (info.routes), each a campaign of
  // its own in the scheduler under its provider; messages queued anywhere
  // in the campaign are routed again when its routes changed.
  void setLanes(Campaign* c, const CampaignInfo& info, std::uint32_t rank, bool routes_changed, MonoTime now);
  // The campaign (or lane) of c's group whose provider carries `m`: the
  // lane of the longest prefix it matches, else the campaign. No allocation.
  Campaign* laneFor(Campaign* c, const Message& m) const;
  // Takes every message out of c's queue and queues it again where it is
  // routed now (a grant held by `c` is given up: under the rate, never over).
  void requeue(Campaign* c);
  // Where each route of campaign `c` (not a lane) sends its traffic now,
  // for CampaignStats::routes; `s` is c's figures with its route filled in.
  static std::vector<RouteStatus> routesOf(const Campaign& c, const CampaignStats& s);

  void dispatch(MonoTime now, bool& blocked);
  bool sendPaid(Campaign* c, MonoTime now);
};

}  // namespace pacer
