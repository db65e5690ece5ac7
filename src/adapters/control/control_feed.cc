#include "pacer/control/control_feed.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "pacer/campaign_rules.h"
#include "pacer/ledger/pg_listener.h"
#include "pacer/control/values.h"
#include "pacer/ledger/pg_ledger.h"
#include "pacer/ledger/pg_directory.h"
#include "pacer/ledger/pg_parking.h"
#include "pacer/validation.h"

namespace pacer::control {
namespace {

using std::chrono::milliseconds;
using Bad = std::set<std::pair<std::string, std::string>>;  // (kind, id) of rows held this pass

// Reconnecting LISTEN: the first attempt this long after the loss, doubling
// up to the maximum. A refused connection on loopback fails at once; an
// unreachable host blocks for the connect timeout, so attempts are spaced out.
constexpr milliseconds kListenBackoffMin{100};
constexpr milliseconds kListenBackoffMax{5000};
constexpr int kListenConnectTimeoutS = 2;  // libpq's smallest useful connect_timeout
// A notice whose row could not be read is retried (a full re-read) this soon.
constexpr milliseconds kControlRetry{500};
// A record for an unknown campaign re-reads at most this often.
constexpr milliseconds kUnknownRefresh{200};

std::int64_t wallMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string rateText(const std::optional<RateLimit>& limit) {
  return limit ? fmt::format("{}", limit->rate_per_s) : std::string("unlimited");
}

std::string burstText(const std::optional<RateLimit>& limit) {
  return limit ? fmt::format("{}", limit->burst) : std::string("-");
}

// class=bulk quiet_hours=21:00-08:00 time_zone=Europe/London frequency_cap=3/24h cap_policy=defer ("-": none).
std::string rulesText(const CampaignInfo& c) {
  const auto orDash = [](const std::string& s) { return s.empty() ? std::string("-") : s; };
  return fmt::format("class={} quiet_hours={} time_zone={} frequency_cap={} cap_policy={}", orDash(c.priority_class),
                     orDash(c.quiet_hours), orDash(c.time_zone),
                     c.frequency_cap ? formatFrequencyCap(*c.frequency_cap) : std::string("-"),
                     capPolicyName(c.cap_policy));
}

// What pacerd does about a skipped row (event=row_skipped action=...).
const char* skippedAction(bool provider, bool values) {
  if (!values)
    return provider ? "its last good version stays in force; never loaded: its campaigns send nothing"
                    : "its last good version stays in force; never loaded: its messages wait";
  return provider ? "its last good version stays in force; never loaded: its campaigns' messages are rejected with "
                    "this reason"
                  : "its last good version stays in force; never loaded: its messages are rejected with this reason";
}

}  // namespace

struct ControlFeed::Impl {
  Impl(ControlFeedOptions o, WorkerCore& c, const TimeSource& t, logging::LoggerPtr l,
       std::function<void(const CampaignInfo&)> on)
      : options(std::move(o)), core(c), clock(t), log(std::move(l)), on_campaign(std::move(on)) {
    ledger::PgLedgerOptions pg{options.postgres};
    directory = std::make_unique<ledger::PgDirectory>(pg);
    pg.connect_timeout_s = kListenConnectTimeoutS;
    listener = std::make_unique<ledger::PgListener>(pg, std::string(kControlChannel));
  }

  ControlFeedOptions options;
  WorkerCore& core;
  const TimeSource& clock;
  logging::LoggerPtr log;
  std::function<void(const CampaignInfo&)> on_campaign;
  std::unique_ptr<ledger::PgDirectory> directory;
  std::unique_ptr<ledger::PgListener> listener;
  MonoTime last_refresh{};
  MonoTime last_complete_check{};
  MonoTime listen_retry_at{};
  milliseconds listen_backoff{kListenBackoffMin};
  bool listen_outage = false;        // LISTEN is down (said once)
  bool directory_failing = false;    // the last full read failed (said once)
  std::optional<MonoTime> retry_at;  // a notice's row could not be read: re-read all then
  std::map<std::pair<std::string, std::string>, std::string> problems;  // rows held now -> reason
  std::uint64_t skipped = 0;
  std::map<std::string, std::pair<double, double>> warned_burst;

  bool refresh(MonoTime now);
  void completeFinished(MonoTime now);
  void applyProvider(const ProviderInfo& p, MonoTime now, Bad& bad);
  void applyCampaign(const CampaignInfo& c, MonoTime now, Bad& bad);
  // `values`: the row's values are bad for every worker (its messages get a
  // rejected row); else this worker's configuration refused it (they wait).
  void rowProblem(const RowProblem& p, MonoTime now, Bad& bad, bool values);
  void forgetProblem(const std::string& kind, const std::string& id, const Bad& bad);
  void connectListener(MonoTime now);
  void pollListener(MonoTime now);
  void applyNotices(const std::vector<std::string>& payloads, MonoTime received);
  void applyNotice(const ControlNotice& n, MonoTime received);
  void logApplied(std::string_view kind, std::string_view id, std::string_view change, std::string_view fields,
                  MonoTime received);
  void warnSmallBurst(const CampaignInfo& c);
};

bool ControlFeed::Impl::refresh(MonoTime now) {
  last_refresh = now;
  const bool owed = retry_at.has_value();
  retry_at.reset();
  std::vector<RowProblem> found;
  std::vector<ProviderInfo> providers;
  std::vector<CampaignInfo> campaigns;
  try {
    providers = directory->providers(&found);
    campaigns = directory->campaigns(&found);
  } catch (const std::exception& e) {
    // Keep going with what is known; said once per outage, not per refresh.
    if (!directory_failing) log->warn("event=directory_refresh_failed error=\"{}\"", e.what());
    directory_failing = true;
    if (owed) retry_at = now + kControlRetry;
    return false;
  }
  if (directory_failing) log->info("event=directory_refresh_recovered");
  directory_failing = false;
  Bad bad;
  for (const ProviderInfo& p : providers) applyProvider(p, now, bad);
  for (const CampaignInfo& c : campaigns) applyCampaign(c, now, bad);
  for (const RowProblem& p : found) rowProblem(p, now, bad, true);
  // Rows that were bad and are now good (or gone) are said once too.
  for (auto it = problems.begin(); it != problems.end();) {
    if (bad.count(it->first) > 0) {
      ++it;
      continue;
    }
    log->info("event=row_accepted kind={} id={}", it->first.first, validation::shownText(it->first.second));
    it = problems.erase(it);
  }
  return true;
}

void ControlFeed::Impl::applyProvider(const ProviderInfo& p, MonoTime now, Bad& bad) {
  try {
    core.upsertProvider(p, now);
  } catch (const std::exception& e) {  // the core refused it after all: held like any bad row
    rowProblem(RowProblem{"provider", p.id, e.what()}, now, bad, false);
  }
}

void ControlFeed::Impl::applyCampaign(const CampaignInfo& c, MonoTime now, Bad& bad) {
  try {
    core.upsertCampaign(c, now);
    if (on_campaign) on_campaign(c);
    warnSmallBurst(c);
  } catch (const std::exception& e) {
    rowProblem(RowProblem{"campaign", c.id, e.what()}, now, bad, false);
  }
}

// A row that fails its checks: held, counted, and named in the log the first
// time and when its reason changes.
void ControlFeed::Impl::rowProblem(const RowProblem& p, MonoTime now, Bad& bad, bool values) {
  ++skipped;
  const auto key = std::make_pair(p.kind, p.id);
  bad.insert(key);
  try {
    if (p.kind == "provider")
      core.holdProvider(p.id, values ? p.reason : std::string(), now);
    else
      core.holdCampaign(p.id, values ? p.reason : std::string(), now);
  } catch (const std::exception&) {
  }
  auto [it, fresh] = problems.emplace(key, p.reason);
  if (!fresh && it->second == p.reason) return;
  it->second = p.reason;
  log->warn("event=row_skipped kind={} id={} reason=\"{}\" action=\"{}\"", p.kind, validation::shownText(p.id),
            validation::shownText(p.reason, 512), skippedAction(p.kind == "provider", values));
}

void ControlFeed::Impl::forgetProblem(const std::string& kind, const std::string& id, const Bad& bad) {
  const auto key = std::make_pair(kind, id);
  if (bad.count(key) > 0 || problems.erase(key) == 0) return;
  log->info("event=row_accepted kind={} id={}", kind, validation::shownText(id));
}

// (Re)opens the LISTEN connection; after an outage, re-reads everything, since
// notices sent meanwhile are gone. A failure is said once per outage and
// retried with backoff; sending goes on regardless.
void ControlFeed::Impl::connectListener(MonoTime now) {
  try {
    listener->connect();
  } catch (const std::exception& e) {
    if (!listen_outage) {
      log->warn("event=control_listen_failed channel={} error=\"{}\" retry_ms={}", kControlChannel, e.what(),
                listen_backoff.count());
      listen_outage = true;
    }
    listen_retry_at = now + listen_backoff;
    listen_backoff = std::min(listen_backoff * 2, kListenBackoffMax);
    return;
  }
  const bool was_out = listen_outage;
  listen_outage = false;
  listen_backoff = kListenBackoffMin;
  log->info("event=control_listening channel={} backend_pid={}{}", kControlChannel, listener->backendPid(),
            was_out ? " after_outage=true" : "");
  if (was_out && !refresh(now)) retry_at = now + kControlRetry;
}

// Reads what arrived on the LISTEN socket without blocking and applies it.
void ControlFeed::Impl::pollListener(MonoTime now) {
  if (!listener->connected()) {
    if (now >= listen_retry_at) connectListener(now);
    return;
  }
  std::vector<std::string> payloads;
  try {
    payloads = listener->poll();
  } catch (const std::exception& e) {
    log->warn("event=control_listen_lost channel={} error=\"{}\" retry_ms={}", kControlChannel, e.what(),
              listen_backoff.count());
    listen_outage = true;
    listen_retry_at = now + listen_backoff;
    listen_backoff = std::min(listen_backoff * 2, kListenBackoffMax);
    return;
  }
  if (!payloads.empty()) applyNotices(payloads, now);
}

// Re-reads each row the notices name (once per row, however many notices
// name it). A payload that is not pacerctl's makes it re-read everything.
void ControlFeed::Impl::applyNotices(const std::vector<std::string>& payloads, MonoTime received) {
  std::vector<ControlNotice> notices;
  bool everything = false;
  for (const std::string& p : payloads) {
    auto n = parseNotifyPayload(p);
    if (!n) {
      log->warn("event=control_unreadable payload=\"{}\" action=full_refresh", p.substr(0, 200));
      everything = true;
      continue;
    }
    auto same = std::find_if(notices.begin(), notices.end(),
                             [&](const ControlNotice& k) { return k.kind == n->kind && k.id == n->id; });
    if (same == notices.end())
      notices.push_back(std::move(*n));
    else if (same->change != n->change)
      same->change += "," + n->change;
  }
  if (everything) {
    if (refresh(clock.now()))
      logApplied("all", "-", "refresh", "", received);
    else
      retry_at = clock.now() + kControlRetry;
  }
  for (const ControlNotice& n : notices) {
    try {
      applyNotice(n, received);
    } catch (const std::exception& e) {
      // The row stays as it was here until a re-read succeeds: soon, not
      // only at the next periodic refresh.
      log->warn("event=control_read_failed kind={} id={} change={} error=\"{}\" retry_ms={}", n.kind, n.id, n.change,
                e.what(), kControlRetry.count());
      retry_at = clock.now() + kControlRetry;
    }
  }
}

void ControlFeed::Impl::applyNotice(const ControlNotice& n, MonoTime received) {
  Bad bad;
  std::optional<std::string> problem;
  if (n.kind == "provider") {
    const auto p = directory->provider(n.id, &problem);
    if (!p) {
      if (problem)
        rowProblem(RowProblem{"provider", n.id, *problem}, clock.now(), bad, true);
      else
        logApplied(n.kind, n.id, n.change, "found=false", received);
      return;
    }
    applyProvider(*p, clock.now(), bad);
    forgetProblem("provider", n.id, bad);
    logApplied(n.kind, n.id, n.change, fmt::format("rate={} burst={}", rateText(p->limit), burstText(p->limit)),
               received);
    return;
  }
  const auto c = directory->campaign(n.id, &problem);
  if (!c) {
    if (problem)
      rowProblem(RowProblem{"campaign", n.id, *problem}, clock.now(), bad, true);
    else
      logApplied(n.kind, n.id, n.change, "found=false", received);
    return;
  }
  // A new campaign may name a provider created a moment before: load it
  // first rather than hold the campaign meanwhile.
  if (!c->provider.empty() && n.change.find("create") != std::string::npos)
    if (const auto p = directory->provider(c->provider)) applyProvider(*p, clock.now(), bad);
  applyCampaign(*c, clock.now(), bad);
  forgetProblem("campaign", n.id, bad);
  logApplied(n.kind, n.id, n.change,
             fmt::format("state={} send_rate={} burst={} weight={} {}", campaignStateName(c->state), rateText(c->limit),
                         burstText(c->limit), c->weight, rulesText(*c)),
             received);
}

// event=control_applied: after_ms from reading the notice off the socket to
// the change being in the core; at_us is the wall clock (microseconds since
// the epoch) when it was, to compare across processes.
void ControlFeed::Impl::logApplied(std::string_view kind, std::string_view id, std::string_view change,
                                   std::string_view fields, MonoTime received) {
  const double after_ms = std::chrono::duration<double, std::milli>(clock.now() - received).count();
  log->info("event=control_applied kind={} id={} change={}{}{} after_ms={:.3f} at_us={}", kind, id, change,
            fields.empty() ? "" : " ", fields, after_ms, wallMicros());
}

// Dispatch happens once per tick, so a burst below send_rate x tick caps the
// campaign at burst per tick. Said once per campaign and setting.
void ControlFeed::Impl::warnSmallBurst(const CampaignInfo& c) {
  if (!c.limit) return;
  const double tick_s = std::chrono::duration<double>(options.tick).count();
  const double per_tick = c.limit->rate_per_s * tick_s;
  const auto key = std::make_pair(c.limit->rate_per_s, c.limit->burst);
  auto it = warned_burst.find(c.id);
  if (it != warned_burst.end() && it->second == key) return;
  warned_burst[c.id] = key;
  if (c.limit->burst >= per_tick) return;
  log->warn(
      "event=burst_below_tick campaign={} send_rate={} burst={} tick_ms={} max_rate={:.0f} "
      "hint=\"set burst to at least {:.0f} (send_rate x tick) to reach send_rate\"",
      c.id, c.limit->rate_per_s, c.limit->burst, options.tick.count(), c.limit->burst / tick_s, std::ceil(per_tick));
}

ControlFeed::ControlFeed(ControlFeedOptions options, WorkerCore& core, const TimeSource& clock, logging::LoggerPtr log,
                         std::function<void(const CampaignInfo&)> on_campaign)
    : impl_(std::make_unique<Impl>(std::move(options), core, clock, std::move(log), std::move(on_campaign))) {}

ControlFeed::~ControlFeed() = default;

void ControlFeed::start(MonoTime now) {
  impl_->connectListener(now);
  impl_->refresh(now);
}

void ControlFeed::poll(MonoTime now) {
  impl_->pollListener(now);
  if (now - impl_->last_refresh >= impl_->options.refresh_interval || (impl_->retry_at && now >= *impl_->retry_at))
    impl_->refresh(now);
  const auto every = impl_->options.complete_interval;
  if (every.count() > 0 && now - impl_->last_complete_check >= every) impl_->completeFinished(now);
}

void ControlFeed::Impl::completeFinished(MonoTime now) {
  last_complete_check = now;
  try {
    // The change reaches every worker (this one too) as a notice on the channel.
    for (const std::string& id : directory->completeFinished()) log->info("event=campaign_completed id={}", id);
  } catch (const std::exception& e) {
    // The next refresh says so if PostgreSQL is away; this is only a late completion.
    log->debug("event=complete_check_failed error=\"{}\"", e.what());
  }
}

bool ControlFeed::refresh(MonoTime now) { return impl_->refresh(now); }

void ControlFeed::unknownCampaign(MonoTime now) {
  if (now - impl_->last_refresh >= kUnknownRefresh) impl_->refresh(now);
}

void ControlFeed::setRefreshInterval(std::chrono::milliseconds interval) noexcept {
  impl_->options.refresh_interval = interval;
}

bool ControlFeed::listening() const { return impl_->listener->connected(); }
std::size_t ControlFeed::invalidRows() const noexcept { return impl_->problems.size(); }
std::uint64_t ControlFeed::rowsSkipped() const noexcept { return impl_->skipped; }

std::vector<CampaignInfo> ControlFeed::campaigns() {
  try {
    return impl_->directory->campaigns();
  } catch (const std::exception&) {
    return {};
  }
}

}  // namespace pacer::control
