// The JSON summary pacerd writes at exit (--summary): totals, providers and
// campaigns with the rate each achieved over its sending span.
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "daemon_parts.h"

namespace pacer::worker {
namespace {

using nlohmann::json;

double seconds(MonoTime from, MonoTime to) { return std::chrono::duration<double>(to - from).count(); }

json totals(const WorkerStats& s, bool with_quota) {
  json j;
  j["read"] = s.read;
  j["sent"] = s.sent;
  j["failed"] = s.failed;
  j["rejected"] = s.rejected;
  j["invalid_token"] = s.invalid_tokens;
  j["suppressed"] = s.suppressed;
  j["expired"] = s.expired;
  j["deferred"] = s.deferred;
  j["cap_round_trips"] = s.cap_round_trips;  // decide() and release() batches: Redis round trips
  j["cap_faults"] = s.cap_faults;
  j["waiting"] = s.waiting;
  j["skipped_finished"] = s.skipped_finished;
  j["parked"] = s.parked;
  j["ledger_rows"] = s.ledger_rows;
  j["ledger_writes"] = s.ledger_writes;
  j["ledger_errors"] = s.ledger_errors;
  if (with_quota)
    j["quota"] = {{"batches", s.quota.batches},
                  {"requests", s.quota.requests},
                  {"tokens_granted", s.quota.tokens_granted},
                  {"tokens_expired", s.quota.tokens_expired},
                  {"tokens_late", s.quota.tokens_late},
                  {"unavailable", s.quota.unavailable},
                  {"degraded_entered", s.quota.degraded_entered},
                  {"throttle_reports", s.quota.throttle_reports},
                  {"shared_pauses", s.quota.shared_pauses}};
  return j;
}

json providers(const std::vector<ProviderStats>& stats) {
  json all = json::array();
  for (const ProviderStats& p : stats) {
    json e;
    e["id"] = p.id;
    e["rate"] = p.ceiling ? json(*p.ceiling) : json(nullptr);
    e["effective_rate"] = p.effective ? json(*p.effective) : json(nullptr);
    e["throttled"] = p.throttled;
    e["throttle_noise"] = p.throttle_noise;
    e["capacity_cuts"] = p.capacity_cuts;
    e["noise_verdicts"] = p.noise_verdicts;
    e["recipient_throttled"] = p.recipient_throttled;
    e["dead_tokens_held"] = p.dead_tokens_held;
    all.push_back(std::move(e));
  }
  return all;
}

json campaign(const CampaignStats& c, const std::map<std::string, const CampaignInfo*>& infos) {
  json e;
  e["id"] = c.id;
  auto info = infos.find(c.id);
  e["send_rate"] = info != infos.end() && info->second->limit ? json(info->second->limit->rate_per_s) : json(nullptr);
  e["sent"] = c.sent;
  e["failed"] = c.failed;
  e["rejected"] = c.rejected;
  e["invalid_token"] = c.invalid_tokens;
  e["suppressed"] = c.suppressed;
  e["expired"] = c.expired;
  e["deferred"] = c.deferred;
  e["retries"] = c.retries;
  e["parked"] = c.parked;
  const double span = c.first_sent && c.last_sent ? seconds(*c.first_sent, *c.last_sent) : 0.0;
  // n sends span n-1 intervals.
  e["achieved_rate"] = c.sent > 1 && span > 0 ? static_cast<double>(c.sent - 1) / span : 0.0;
  e["sending_s"] = span;
  return e;
}

}  // namespace

void writeSummary(const std::string& file, MonoTime start, MonoTime end, const WorkerCore& core, bool with_quota,
                  const std::vector<CampaignInfo>& infos, const logging::LoggerPtr& log) {
  if (file.empty()) return;
  const WorkerStats s = core.stats();
  json j = totals(s, with_quota);
  j["elapsed_s"] = seconds(start, end);
  j["providers"] = providers(core.providerStats(end));
  // The sending span: first to last `sent` over all campaigns, so the rate
  // leaves out the group join and the idle wait before exit.
  std::optional<MonoTime> first, last;
  const std::vector<CampaignStats> campaigns = core.campaignStats();
  for (const CampaignStats& c : campaigns) {
    if (c.first_sent && (!first || *c.first_sent < *first)) first = c.first_sent;
    if (c.last_sent && (!last || *c.last_sent > *last)) last = c.last_sent;
  }
  const double span = first && last ? seconds(*first, *last) : 0.0;
  j["sending_s"] = span;
  j["sent_per_s"] = span > 0 ? static_cast<double>(s.sent) / span : 0.0;
  j["ledger_rows_per_s"] = span > 0 ? static_cast<double>(s.ledger_rows) / span : 0.0;
  std::map<std::string, const CampaignInfo*> by_id;
  for (const CampaignInfo& c : infos) by_id[c.id] = &c;
  json list = json::array();
  for (const CampaignStats& c : campaigns) list.push_back(campaign(c, by_id));
  j["campaigns"] = std::move(list);
  std::ofstream f(file);
  f << j.dump(2) << "\n";
  if (!f) log->warn("event=summary_write_failed file={}", file);
}

}  // namespace pacer::worker
