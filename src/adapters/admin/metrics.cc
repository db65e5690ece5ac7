#include "pacer/admin/metrics.h"

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <deque>
#include <initializer_list>
#include <map>
#include <utility>

namespace pacer::admin {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::initializer_list<std::pair<const char*, std::string_view>>;

// The families in the order they are written; a family with no series is
// left out (no HELP/TYPE lines without a sample). A deque, so the references
// family() hands out stay valid while more families are added.
class Families {
 public:
  MetricFamily& family(const char* name, const char* help, MetricType type) {
    out_.push_back(MetricFamily{name, help, type, {}});
    return out_.back();
  }
  static void add(MetricFamily& f, Labels labels, double value) {
    ClientMetric m;
    for (const auto& [k, v] : labels) m.label.push_back(ClientMetric::Label{k, std::string(v)});
    if (f.type == MetricType::Counter)
      m.counter.value = value;
    else
      m.gauge.value = value;
    f.metric.push_back(std::move(m));
  }
  // One series without labels.
  void single(const char* name, const char* help, MetricType type, double value) {
    add(family(name, help, type), {}, value);
  }
  std::vector<MetricFamily> take() {
    std::vector<MetricFamily> out;
    out.reserve(out_.size());
    for (MetricFamily& f : out_)
      if (!f.metric.empty()) out.push_back(std::move(f));
    return out;
  }

 private:
  std::deque<MetricFamily> out_;
};

constexpr MetricType kCounter = MetricType::Counter;
constexpr MetricType kGauge = MetricType::Gauge;

double d(std::uint64_t v) { return static_cast<double>(v); }

// The process.
void processMetrics(Families& f, const MetricsSnapshot& s) {
  f.single("pacer_up", "1 while pacerd runs (the admin listener answers)", kGauge, 1);
  Families::add(f.family("pacer_build_info", "pacerd's version and mode; always 1", kGauge),
                {{"version", s.version}, {"sink", s.sink}, {"quota", s.quota_mode}}, 1);
  f.single("pacer_start_time_seconds", "when pacerd started, Unix time in seconds", kGauge, s.start_time_seconds);
}

// One series per campaign and figure.
void campaignMetrics(Families& f, const MetricsSnapshot& s) {
  auto& sent = f.family("pacer_campaign_sent_total", "messages delivered (ledger status sent)", kCounter);
  auto& failed = f.family("pacer_campaign_failed_total", "messages failed after retries or cancelled", kCounter);
  auto& rejected = f.family("pacer_campaign_rejected_total", "messages rejected as bad input", kCounter);
  auto& invalid_tokens =
      f.family("pacer_campaign_invalid_tokens_total",
               "messages whose push token the provider called dead (ledger status invalid_token)", kCounter);
  auto& suppressed = f.family("pacer_campaign_suppressed_total",
                              "messages a frequency cap refused (ledger status suppressed)", kCounter);
  auto& expired = f.family("pacer_campaign_expired_total",
                           "messages past their deadline before they could be sent (ledger status expired)", kCounter);
  auto& deferred = f.family("pacer_campaign_deferred_total",
                            "times a frequency cap made a message wait (policy defer, or the cap store down)", kCounter);
  auto& quiet = f.family("pacer_campaign_quiet_waiting",
                         "messages waiting in memory for the recipient's quiet hours to end", kGauge);
  auto& retries = f.family("pacer_campaign_retries_total", "sends answered with a retry (throttle or fault)", kCounter);
  auto& rate = f.family("pacer_campaign_send_rate", "configured send_rate, msg/s (absent when unlimited)", kGauge);
  auto& achieved =
      f.family("pacer_campaign_achieved_rate", "messages sent per second over the last 10 s by this worker", kGauge);
  auto& backlog = f.family("pacer_campaign_backlog",
                           "messages held by this worker: queued, waiting to retry or park, and parked", kGauge);
  auto& in_flight = f.family("pacer_campaign_in_flight", "messages in the sink now", kGauge);
  for (const CampaignMetrics& c : s.campaigns) {
    const Labels l{{"campaign", c.id}, {"provider", c.provider}};
    Families::add(sent, l, d(c.sent));
    Families::add(failed, l, d(c.failed));
    Families::add(rejected, l, d(c.rejected));
    Families::add(invalid_tokens, l, d(c.invalid_tokens));
    Families::add(suppressed, l, d(c.suppressed));
    Families::add(expired, l, d(c.expired));
    Families::add(deferred, l, d(c.deferred));
    Families::add(quiet, l, d(c.quiet_waiting));
    Families::add(retries, l, d(c.retries));
    if (c.send_rate) Families::add(rate, l, *c.send_rate);
    Families::add(achieved, l, c.achieved_rate);
    Families::add(backlog, l, d(c.backlog));
    Families::add(in_flight, l, d(c.in_flight));
  }
  auto& class_queued =
      f.family("pacer_class_queued", "messages queued in this worker's memory, per priority class", kGauge);
  for (const auto& [name, queued] : s.class_queued) Families::add(class_queued, {{"class", name}}, d(queued));
}

// One series per provider and figure, and the directory's bad rows.
void providerMetrics(Families& f, const MetricsSnapshot& s) {
  auto& prate = f.family("pacer_provider_send_rate", "configured provider rate (the ceiling), msg/s", kGauge);
  auto& peff = f.family("pacer_provider_effective_rate", "adaptive provider rate now, msg/s", kGauge);
  auto& ppaused = f.family("pacer_provider_paused", "1 while the provider is paused after a 429/503", kGauge);
  auto& pthrottled =
      f.family("pacer_provider_throttled_total", "throttles (429, 503 with Retry-After) this worker got", kCounter);
  auto& pcircuit = f.family("pacer_provider_circuit_open", "1 while the provider's circuit breaker is open", kGauge);
  auto& pworkers =
      f.family("pacer_provider_workers", "workers sharing the provider, as last heard from the global quota", kGauge);
  auto& pdegraded =
      f.family("pacer_provider_quota_degraded", "1 while the global quota does not answer for the provider", kGauge);
  auto& pnoise = f.family("pacer_provider_throttle_noise_ratio",
                           "share of answers this worker's throttle judge takes for noise (not a ceiling)", kGauge);
  auto& pcuts = f.family("pacer_provider_capacity_cuts_total",
                         "throttles judged a ceiling: the rate came down to what the provider accepted", kCounter);
  auto& pnoisev = f.family("pacer_provider_noise_verdicts_total",
                           "judged cuts taken back: the throttles did not fall with the rate", kCounter);
  auto& precipient = f.family("pacer_provider_recipient_throttled_total",
                              "throttles of one recipient (APNs 429 TooManyRequests): that message backs off, the "
                              "provider does not pause",
                              kCounter);
  auto& pguard =
      f.family("pacer_provider_dead_token_guard",
               "1 while this worker's dead-token guard holds: no token is marked dead, the provider pauses", kGauge);
  auto& pdead_ratio = f.family("pacer_provider_dead_token_ratio",
                               "share of the answers in the dead-token guard's window that call a token dead", kGauge);
  auto& pguard_trips =
      f.family("pacer_provider_dead_token_guard_trips_total", "times the dead-token guard started holding", kCounter);
  auto& pheld =
      f.family("pacer_provider_dead_tokens_held_total",
               "dead-token verdicts the guard held: failed rows instead of invalid_token, not exported", kCounter);
  for (const ProviderMetrics& p : s.providers) {
    const Labels l{{"provider", p.id}};
    Families::add(pnoise, l, p.throttle_noise);
    Families::add(pcuts, l, d(p.capacity_cuts));
    Families::add(pnoisev, l, d(p.noise_verdicts));
    if (p.send_rate) Families::add(prate, l, *p.send_rate);
    if (p.effective_rate) Families::add(peff, l, *p.effective_rate);
    Families::add(ppaused, l, p.paused ? 1 : 0);
    Families::add(pthrottled, l, d(p.throttled));
    Families::add(pdegraded, l, p.degraded ? 1 : 0);
    Families::add(pcircuit, l, p.circuit_open ? 1 : 0);
    Families::add(pworkers, l, p.workers);
    Families::add(precipient, l, d(p.recipient_throttled));
    Families::add(pguard, l, p.dead_token_guard ? 1 : 0);
    Families::add(pdead_ratio, l, p.dead_token_ratio);
    Families::add(pguard_trips, l, d(p.dead_token_trips));
    Families::add(pheld, l, d(p.dead_tokens_held));
  }
  f.single("pacer_directory_rows_invalid", "campaign and provider rows failing their checks now (skipped)", kGauge,
           d(s.directory_rows_invalid));
  f.single("pacer_directory_rows_skipped_total", "times a refresh or a notice skipped an invalid row", kCounter,
           d(s.directory_rows_skipped_total));
}

// Kafka: records, memory, offsets per partition.
void intakeMetrics(Families& f, const MetricsSnapshot& s) {
  f.single("pacer_records_read_total", "Kafka records read", kCounter, d(s.read));
  f.single("pacer_records_skipped_total", "replayed records skipped, already in the ledger", kCounter,
           d(s.skipped_finished));
  f.single("pacer_records_rejected_without_campaign_total",
           "records rejected that name no known campaign (not in any campaign's rejected_total)", kCounter,
           d(s.rejected_without_campaign));
  f.single("pacer_buffered_messages", "messages held in memory", kGauge, d(s.buffered_messages));
  f.single("pacer_buffered_bytes", "bytes held in memory", kGauge, d(s.buffered_bytes));
  f.single("pacer_intake_paused", "1 while reading of some partition is paused at the memory bound", kGauge, s.intake_paused ? 1 : 0);
  auto& lag = f.family("pacer_kafka_offset_lag", "high watermark minus committed offset", kGauge);
  auto& committed = f.family("pacer_kafka_committed_offset", "the offset committed (next to read)", kGauge);
  for (const PartitionMetrics& p : s.partitions) {
    const std::string part = std::to_string(p.partition);
    const Labels l{{"topic", p.topic}, {"partition", part}};
    if (p.committed >= 0) Families::add(committed, l, static_cast<double>(p.committed));
    if (p.committed >= 0 && p.high_watermark >= 0)
      Families::add(lag, l, static_cast<double>(std::max<std::int64_t>(0, p.high_watermark - p.committed)));
  }
}

// The ledger and parking.
void ledgerMetrics(Families& f, const MetricsSnapshot& s) {
  f.single("pacer_ledger_rows_written_total", "ledger rows written (new; replays not counted)", kCounter,
           d(s.ledger_rows));
  f.single("pacer_ledger_writes_total", "ledger batches written", kCounter, d(s.ledger_writes));
  f.single("pacer_ledger_errors_total", "failed ledger or parking writes (each retried)", kCounter, d(s.ledger_errors));
  f.single("pacer_ledger_pending_rows", "outcomes known but not yet in the ledger", kGauge, d(s.ledger_pending_rows));
  f.single("pacer_receipts_recorded_total", "delivery receipts (SMPP) this worker received and wrote to the ledger",
           kCounter, d(s.receipts));
  f.single("pacer_receipts_pending", "delivery receipts received, not yet in the ledger", kGauge,
           d(s.receipts_pending));
  f.single("pacer_ledger_oldest_pending_seconds", "age of the oldest outcome not yet in the ledger (0: none)", kGauge,
           s.ledger_oldest_pending_seconds);
  f.single("pacer_unrecorded_messages", "messages in the sink or awaiting the ledger", kGauge, d(s.unrecorded));
  f.single("pacer_ledger_failing", "1 while the last ledger or parking write failed", kGauge, s.store_failing ? 1 : 0);
  f.single("pacer_parked_total", "messages parked in PostgreSQL", kCounter, d(s.parked));
  f.single("pacer_unparked_total", "parked messages claimed back", kCounter, d(s.unparked));
  f.single("pacer_cap_round_trips_total", "frequency-cap store round trips (one per batch of checks or releases)",
           kCounter, d(s.cap_round_trips));
  f.single("pacer_cap_faults_total", "frequency-cap round trips the store did not answer (messages wait)", kCounter,
           d(s.cap_faults));
}

// The global quota, with one.
void quotaMetrics(Families& f, const MetricsSnapshot& s) {
  if (!s.has_quota) return;
  const QuotaMetrics& q = s.quota;
  f.single("pacer_quota_lease_batches_total", "lease batches sent to the quota backend", kCounter, d(q.batches));
  f.single("pacer_quota_lease_requests_total", "lease requests sent", kCounter, d(q.requests));
  f.single("pacer_quota_tokens_granted_total", "tokens received in leases", kCounter, d(q.tokens_granted));
  f.single("pacer_quota_tokens_expired_total", "lease tokens that expired unspent", kCounter, d(q.tokens_expired));
  f.single("pacer_quota_tokens_late_total",
           "of the expired lease tokens, those forfeited because they fell due and this worker's loop did not spend "
           "them within 1.5 ticks",
           kCounter, d(q.tokens_late));
  f.single("pacer_quota_unavailable_total", "lease requests the quota did not answer", kCounter, d(q.unavailable));
  f.single("pacer_quota_degraded_entered_total", "provider transitions into degraded mode", kCounter,
           d(q.degraded_entered));
  f.single("pacer_quota_degraded_providers", "providers in degraded mode now", kGauge, d(q.degraded_providers));
  f.single("pacer_quota_throttle_reports_total", "throttles reported to the shared adaptive rate", kCounter,
           d(q.throttle_reports));
  f.single("pacer_quota_shared_pauses_total", "pauses first heard of from the quota (another worker's 429)", kCounter,
           d(q.shared_pauses));
  f.single("pacer_quota_refused_total", "lease requests granted nothing (a useful share did not fit yet)", kCounter,
           d(q.refused));
  f.single("pacer_quota_health_reports_total", "lease requests that carried answers for the circuit breaker", kCounter,
           d(q.health_reports));
}

// Redis round trips and faults, with a Redis backend.
void redisMetrics(Families& f, const MetricsSnapshot& s) {
  if (!s.has_redis) return;
  const RedisQuotaStats& r = s.redis;
  f.single("pacer_redis_round_trips_total", "round trips to Redis (pipelined batches, script loads, slot maps)",
           kCounter, d(r.round_trips));
  auto& errors = f.family("pacer_redis_errors_total", "Redis faults by kind", kCounter);
  Families::add(errors, {{"kind", "io"}}, d(r.io_errors));
  Families::add(errors, {{"kind", "timeout"}}, d(r.timeouts));
  Families::add(errors, {{"kind", "reply"}}, d(r.reply_errors));
  Families::add(errors, {{"kind", "limit_refused"}}, d(r.limits_refused));
  auto& h = f.family("pacer_redis_round_trip_seconds", "a lease batch's pipelined round trip to Redis",
                     MetricType::Histogram);
  ClientMetric m;
  m.histogram.sample_count = r.round_trip_count;
  m.histogram.sample_sum = r.round_trip_seconds;
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < kRedisRoundTripBounds.size(); ++i) {
    cumulative += r.round_trip_buckets[i];
    m.histogram.bucket.push_back(ClientMetric::Bucket{cumulative, kRedisRoundTripBounds[i]});
  }
  h.metric.push_back(std::move(m));  // TextSerializer adds le="+Inf" with sample_count
}

// SMPP sessions, one series per SMPP sink and figure.
void smppMetrics(Families& f, const MetricsSnapshot& s) {
  auto& up = f.family("pacer_smpp_binds_up", "SMPP sessions bound now", kGauge);
  auto& binds = f.family("pacer_smpp_binds_configured",
                         "binds configured per worker (a transmitter-receiver pair is one)", kGauge);
  auto& connects =
      f.family("pacer_smpp_connects_total", "TCP connections made to the SMSC (first and reconnects)", kCounter);
  auto& disconnects = f.family("pacer_smpp_disconnects_total", "SMPP sessions that ended, for any reason", kCounter);
  auto& refused = f.family("pacer_smpp_bind_failures_total", "binds refused or unanswered", kCounter);
  auto& errors = f.family("pacer_smpp_protocol_errors_total", "PDUs from the SMSC not understood", kCounter);
  auto& submits = f.family("pacer_smpp_submit_sm_total", "submit_sm PDUs sent (segments)", kCounter);
  auto& in_use = f.family("pacer_smpp_window_in_use", "submit_sm sent and not yet answered, all binds", kGauge);
  auto& size = f.family("pacer_smpp_window_size", "room for them: transmitting binds up x window", kGauge);
  auto& latency = f.family("pacer_smpp_submit_latency_seconds",
                           "moving average from a submit_sm to its answer (absent until one is answered)", kGauge);
  auto& capacity = f.family("pacer_smpp_window_capacity",
                            "submit_sm per second the configured window x binds carry at that latency", kGauge);
  for (const SmppSinkMetrics& m : s.smpp) {
    const Labels l{{"sink", m.sink}};
    const sink::SmppSinkStats& st = m.stats;
    Families::add(up, l, d(st.binds_up));
    Families::add(binds, l, d(m.binds));
    Families::add(connects, l, d(st.connects));
    Families::add(disconnects, l, d(st.disconnects));
    Families::add(refused, l, d(st.bind_failures));
    Families::add(errors, l, d(st.protocol_errors));
    Families::add(submits, l, d(st.submit_sm));
    Families::add(in_use, l, d(st.window_in_use));
    Families::add(size, l, d(st.window_size));
    if (st.submit_latency_ms <= 0) continue;
    Families::add(latency, l, st.submit_latency_ms / 1000.0);
    Families::add(capacity, l, sink::smppWindowCapacity(m.window, m.binds, st.submit_latency_ms));
  }
}

}  // namespace

void eventMetrics(Families& f, const MetricsSnapshot& s) {
  if (!s.has_events) return;
  f.single("pacer_events_published_total", "outcome events the broker acknowledged (covered by the outbox cursor)",
           kCounter, d(s.events_published));
  f.single("pacer_events_failed_total", "outcome events not acknowledged (they stay in the outbox and go again)",
           kCounter, d(s.events_failed));
  f.single("pacer_events_store_errors_total", "outbox reads, cursor updates or deletes that failed (PostgreSQL)", kCounter,
           d(s.events_store_errors));
  f.single("pacer_events_outbox_depth", "this worker's outbox rows not yet published", kGauge,
           static_cast<double>(s.events_outbox_depth));
  f.single("pacer_events_lag_seconds", "age of the oldest of them (0: none)", kGauge, s.events_lag_seconds);
  if (!s.has_callbacks) return;
  f.single("pacer_callbacks_sent_total", "callback events a campaign's URL accepted (2xx)", kCounter,
           d(s.callbacks_sent));
  f.single("pacer_callbacks_failed_total",
           "callback events given up on (refused, attempts spent, no usable URL); logged per campaign", kCounter,
           d(s.callbacks_failed));
  f.single("pacer_callbacks_retried_total", "callback POSTs answered 408, 429, 5xx or not at all, to be tried again",
           kCounter, d(s.callbacks_retried));
  f.single("pacer_callbacks_store_errors_total", "callbacks' outbox reads or deletes that failed (PostgreSQL)",
           kCounter, d(s.callbacks_store_errors));
  f.single("pacer_callbacks_queued", "callback events held in memory (read, not yet finished)", kGauge,
           static_cast<double>(s.callbacks_queued));
  f.single("pacer_callbacks_outbox_depth", "this worker's callbacks' outbox rows not yet finished", kGauge,
           static_cast<double>(s.callbacks_outbox_depth));
  f.single("pacer_callbacks_lag_seconds", "age of the oldest of them (0: none)", kGauge, s.callbacks_lag_seconds);
}

std::string renderMetrics(const MetricsSnapshot& s) {
  Families f;
  for (auto section : {processMetrics, campaignMetrics, providerMetrics, intakeMetrics, ledgerMetrics, quotaMetrics,
                       redisMetrics, smppMetrics, eventMetrics})
    section(f, s);
  return prometheus::TextSerializer().Serialize(f.take());
}

void RateWindow::add(MonoTime now, std::uint64_t count) noexcept {
  ring_[next_] = {now, count};
  next_ = (next_ + 1) % kSamples;
  size_ = std::min(size_ + 1, kSamples);
}

double RateWindow::rate() const noexcept {
  if (size_ < 2) return 0.0;
  const auto at = [&](std::size_t age) -> const std::pair<MonoTime, std::uint64_t>& {
    return ring_[(next_ + kSamples - 1 - age) % kSamples];  // age 0: the newest
  };
  const auto& newest = at(0);
  std::size_t age = 1;
  while (age + 1 < size_ && newest.first - at(age).first < kSpan) ++age;
  const auto& oldest = at(age);
  const double secs = std::chrono::duration<double>(newest.first - oldest.first).count();
  if (secs <= 0 || newest.second < oldest.second) return 0.0;
  return static_cast<double>(newest.second - oldest.second) / secs;
}

namespace {

// A campaign with a message counted, held or in flight here.
bool touched(const CampaignStats& c) {
  return c.sent + c.failed + c.rejected + c.invalid_tokens + c.suppressed + c.expired + c.deferred + c.quiet_waiting +
             c.retries + c.queued + c.retrying + c.to_park + c.parked_waiting + c.in_flight >
         0;
}

// Everything but the achieved rate (the builder's rate window).
CampaignMetrics campaignMetricsOf(const CampaignStats& c) {
  CampaignMetrics m;
  m.id = c.id;
  m.provider = c.provider;
  m.sent = c.sent;
  m.failed = c.failed;
  m.rejected = c.rejected;
  m.invalid_tokens = c.invalid_tokens;
  m.suppressed = c.suppressed;
  m.expired = c.expired;
  m.deferred = c.deferred;
  m.quiet_waiting = c.quiet_waiting;
  m.retries = c.retries;
  if (c.limit) m.send_rate = c.limit->rate_per_s;
  m.backlog = c.queued + c.retrying + c.to_park + c.parked_waiting + c.quiet_waiting;
  m.in_flight = c.in_flight;
  m.retrying = c.retrying;
  m.cap_waiting = c.cap_waiting;
  m.in_memory = c.queued + c.retrying + c.to_park + c.quiet_waiting + c.cap_waiting;
  m.route = c.route;
  m.route_reason = c.route_reason;
  m.routes = c.routes;
  return m;
}

// Every class a campaign is in, with what its campaigns queue (0 included, so
// a class's series does not come and go with its traffic).
std::vector<std::pair<std::string, std::uint64_t>> classQueued(const std::vector<CampaignStats>& campaigns) {
  std::map<std::string, std::uint64_t> by_class;
  for (const CampaignStats& c : campaigns)
    by_class[c.priority_class.empty() ? std::string("default") : c.priority_class] += c.queued;
  return {by_class.begin(), by_class.end()};
}

}  // namespace

SnapshotBuilder::SnapshotBuilder(std::string version, std::string sink, std::string quota_mode,
                                 double start_time_seconds)
    : version_(std::move(version)),
      sink_(std::move(sink)),
      quota_mode_(std::move(quota_mode)),
      start_time_seconds_(start_time_seconds) {}

MetricsSnapshot SnapshotBuilder::build(MonoTime now, const WorkerStats& w, const std::vector<CampaignStats>& campaigns,
                                       const std::vector<ProviderStats>& providers, const RedisQuotaStats* redis,
                                       std::vector<PartitionMetrics> partitions, bool joined, bool intake_paused) {
  MetricsSnapshot s;
  s.version = version_;
  s.sink = sink_;
  s.quota_mode = quota_mode_;
  s.start_time_seconds = start_time_seconds_;
  s.read = w.read;
  s.skipped_finished = w.skipped_finished;
  s.buffered_messages = w.buffered_messages;
  s.buffered_bytes = w.buffered_bytes;
  s.intake_paused = intake_paused;
  s.ledger_rows = w.ledger_rows;
  s.ledger_writes = w.ledger_writes;
  s.ledger_errors = w.ledger_errors;
  s.ledger_pending_rows = w.pending_rows;
  s.receipts = w.receipts;
  s.receipts_pending = w.pending_receipts;
  if (w.oldest_pending_row && now > *w.oldest_pending_row)
    s.ledger_oldest_pending_seconds = std::chrono::duration<double>(now - *w.oldest_pending_row).count();
  s.unrecorded = w.unrecorded;
  s.store_failing = w.store_failing;
  s.parked = w.parked;
  s.unparked = w.unparked;
  s.cap_round_trips = w.cap_round_trips;
  s.cap_faults = w.cap_faults;

  std::uint64_t attributed_rejections = 0;
  s.campaigns.reserve(campaigns.size());
  for (const CampaignStats& c : campaigns) {
    attributed_rejections += c.rejected;
    // Only campaigns this worker has handled a message of: every worker knows
    // every campaign, and idle ones would multiply the series by the workers.
    // Once in, a campaign stays (its counters must not vanish).
    if (!touched(c) && !windows_.contains(c.id)) continue;
    CampaignMetrics m = campaignMetricsOf(c);
    RateWindow& window = windows_[c.id];
    window.add(now, c.sent);
    m.achieved_rate = window.rate();
    s.campaigns.push_back(std::move(m));
  }
  s.rejected_without_campaign = w.rejected > attributed_rejections ? w.rejected - attributed_rejections : 0;
  s.class_queued = classQueued(campaigns);

  s.providers.reserve(providers.size());
  std::size_t degraded = 0;
  for (const ProviderStats& p : providers) {
    ProviderMetrics m{p.id,       p.ceiling,      p.effective, p.paused,       p.throttled,
                      p.degraded, p.circuit_open, p.workers,   p.server_errors};
    m.throttle_noise = p.throttle_noise;
    m.capacity_cuts = p.capacity_cuts;
    m.noise_verdicts = p.noise_verdicts;
    m.recipient_throttled = p.recipient_throttled;
    m.dead_token_guard = p.dead_token_guard;
    m.dead_token_ratio = p.dead_token_ratio;
    m.dead_token_trips = p.dead_token_trips;
    m.dead_tokens_held = p.dead_tokens_held;
    s.providers.push_back(std::move(m));
    if (p.degraded) ++degraded;
  }
  s.partitions = std::move(partitions);
  s.has_quota = quota_mode_ != "local";
  s.quota = w.quota;
  if (redis) {
    s.has_redis = true;
    s.redis = *redis;
  }
  s.readiness.joined = joined;
  s.readiness.store_failing = w.store_failing;
  s.readiness.quota = s.has_quota;
  s.readiness.providers = providers.size();
  s.readiness.degraded_providers = degraded;
  return s;
}

}  // namespace pacer::admin
