// pacerctl campaign ... and provider ...: one function per subcommand, each
// checking its values before it connects.
#include <fmt/format.h>

#include "cli_parts.h"
#include "pacer/control/table.h"
#include "pacer/validation.h"

namespace pacer::control::cli {
namespace {

void idArg(CLI::App* cmd, Values& v, const char* what) {
  cmd->add_option("id", v.id, fmt::format("{} id", what))->required();
}

void limitArgs(CLI::App* cmd, Values& v, bool rate_positional) {
  if (rate_positional)
    optionalText(cmd, "rate", v.rate, "a rate: 100, 100/s, 6000/min, 100k/h, or unlimited")->required();
  else
    optionalText(cmd, "--rate", v.rate, "a rate: 100, 100/s, 6000/min, 100k/h, or unlimited (default: unlimited)");
  optionalText(cmd, "--burst", v.burst,
               "messages that may go at once, >= 1 (default: ceil(rate / 100) + 1, 10 ms of the rate)");
}

Limit limitOf(const Values& v, std::string_view rate_flag) {
  return makeLimit(v.rate ? parseRate(*v.rate, rate_flag) : std::nullopt,
                   v.burst ? std::optional<double>(parseBurst(*v.burst, "--burst")) : std::nullopt);
}

void rulesArgs(CLI::App* cmd, Values& v) {
  optionalText(cmd, "--class", v.priority_class,
               "priority class, one of pacerd's priority.classes, or default (default: pacerd's default class)");
  optionalText(cmd, "--quiet-hours", v.quiet_hours,
               "HH:MM-HH:MM in the recipient's local time when nothing is sent (21:00-08:00), or none (default: none)");
  optionalText(cmd, "--time-zone", v.time_zone,
               "IANA zone of recipients whose message has no tz header (Europe/London), or none; needed with "
               "--quiet-hours");
  optionalText(cmd, "--cap", v.cap,
               "frequency cap: at most LIMIT messages per recipient in any WINDOW (3/24h, 1/30m, 10/7d), or none "
               "(default: none)");
  optionalText(cmd, "--cap-policy", v.cap_policy,
               "what a capped message becomes: suppress (a suppressed ledger row) or defer (it waits) "
               "(default: suppress)");
  optionalText(cmd, "--ttl", v.ttl,
               "default message lifetime from when pacerd reads it: seconds (300) or 90s, 5m, 2h, 1d, 1 s to 30 d; "
               "past it a message is expired, not sent; a pacer-expires-at header that is earlier wins; or none "
               "(default: none)");
  optionalText(cmd, "--failover", v.failover,
               "providers that take the campaign's traffic, in order, while its provider cannot (breaker open, "
               "SMPP binds failing): ids separated by ',' (sms-b,sms-c), at most 4, of the provider's protocol; "
               "or none (default: none)");
  optionalText(cmd, "--routes", v.routes,
               "prefix routes for an SMS campaign: PREFIX=PROVIDER entries separated by ',' (44=sms-uk,1=sms-us); a "
               "number takes the route of the longest prefix it starts with (a leading '+' ignored), any other "
               "number the campaign's provider; at most 32, providers of the provider's protocol; or none "
               "(default: none)");
  optionalText(cmd, "--callback", v.callback,
               "URL that each outcome event of the campaign is POSTed to as JSON (docs/callbacks.md): http:// or "
               "https://; or none (default: none)");
}

CampaignRules rulesOf(const Values& v) {
  CampaignRules r;
  if (v.priority_class) r.priority_class = parseClassName(*v.priority_class, "--class");
  if (v.quiet_hours) r.quiet_hours = parseQuietHoursText(*v.quiet_hours, "--quiet-hours");
  if (v.time_zone) r.time_zone = parseTimeZoneText(*v.time_zone, "--time-zone");
  if (v.cap) r.frequency_cap = parseFrequencyCapText(*v.cap, "--cap");
  if (v.cap_policy) r.cap_policy = parseCapPolicyText(*v.cap_policy, "--cap-policy");
  if (v.ttl) r.default_ttl_ms = parseTtlText(*v.ttl, "--ttl");
  if (v.failover) r.failover = parseFailoverText(*v.failover, "--failover");
  if (v.routes) r.routes = parseRoutesText(*v.routes, "--routes");
  if (v.callback) r.callback_url = parseCallbackUrlText(*v.callback, "--callback");
  return r;
}

std::string orDash(const std::string& text) { return text.empty() ? "-" : text; }
std::string classText(const std::string& c) { return c.empty() ? "default" : c; }
std::string orNone(const std::string& text) { return text.empty() ? "none" : text; }

// "class bulk, quiet hours 21:00-08:00 (Europe/London), cap 3/24h (suppress), ttl 5m"
std::string rulesText(const CampaignRow& c) {
  return fmt::format("class {}, quiet hours {}{}, cap {} ({}){}{}{}{}", classText(c.priority_class),
                     orNone(c.quiet_hours), c.time_zone.empty() ? "" : fmt::format(" ({})", c.time_zone),
                     orNone(c.frequency_cap), c.cap_policy,
                     c.default_ttl_ms > 0 ? ", ttl " + formatTtl(c.default_ttl_ms) : std::string(),
                     c.failover.empty() ? std::string() : ", failover " + formatFailover(c.failover),
                     c.routes.empty() ? std::string() : ", routes " + formatRoutes(c.routes),
                     c.callback_url.empty() ? std::string() : ", callback " + c.callback_url);
}

void campaignCreate(Session& s, const Values& v) {
  NewCampaign nc;
  checkId(v.id, "campaign");
  nc.id = v.id;
  nc.name = v.name.value_or("");
  checkName(nc.name);
  nc.limit = limitOf(v, "--rate");
  nc.weight = v.weight ? parseWeight(*v.weight, "--weight") : 1.0;
  if (v.provider) checkId(*v.provider, "provider");  // an empty one is refused, not taken as none
  nc.provider = v.provider.value_or("");
  if (v.total) nc.total = parseCount(*v.total, "--total", 0, "a total");
  nc.rules = rulesOf(v);
  const CampaignRow c = s.db().createCampaign(nc);
  if (s.json) return s.emit(Json{{"change", "create"}, {"changed", true}, {"campaign", campaignJson(c)}});
  s.out << fmt::format(
      "campaign '{}' created: state {}, send_rate {}, burst {}, weight {}, provider {}, total {}, {}\n", c.id, c.state,
      rateText(c.limit.rate), number(c.limit.burst), number(c.weight), c.provider.empty() ? "none" : c.provider,
      totalText(c.total), rulesText(c));
}

void campaignList(Session& s) {
  const std::vector<CampaignRow> rows = s.db().campaigns();
  if (s.json) return s.emit(campaignListJson(rows));
  if (rows.empty()) {
    s.out << "no campaigns; `pacerctl campaign create ID --rate R` adds one\n";
    return;
  }
  Table t({"ID", "NAME", "STATE", "SEND_RATE", "BURST", "WEIGHT", "PROVIDER", "CLASS", "QUIET HOURS", "TIME ZONE",
           "CAP", "UPDATED (UTC)"},
          {false, false, false, true, true, true, false, false, false, false, false, false});
  for (const CampaignRow& c : rows)
    t.add({validation::shownText(c.id, validation::kMaxIdBytes),
           orDash(validation::shownText(c.name, validation::kMaxNameBytes)), c.state, rateText(c.limit.rate),
           number(c.limit.burst), number(c.weight), orDash(c.provider), classText(c.priority_class),
           orDash(c.quiet_hours), orDash(c.time_zone),
           c.frequency_cap.empty() ? "-" : fmt::format("{} {}", c.frequency_cap, c.cap_policy), c.updated_at});
  s.out << t.render();
  for (const CampaignRow& c : rows) {
    std::string problem;
    if (!campaignInfoOf(c, &problem))
      s.out << fmt::format("invalid: campaign '{}' ({}): pacerd skips it\n", validation::shownText(c.id), problem);
  }
}

void campaignShow(Session& s, const Values& v) {
  checkId(v.id, "campaign");
  const CampaignDetail d = s.db().campaign(v.id);
  const CampaignRow& c = d.campaign;
  if (s.json) return s.emit(campaignDetailJson(d));
  Table t({"FIELD", "VALUE"});
  t.add({"id", c.id});
  t.add({"name", c.name.empty() ? "-" : c.name});
  t.add({"state", c.state});
  t.add({"send_rate", rateText(c.limit.rate)});
  t.add({"burst", number(c.limit.burst)});
  t.add({"weight", number(c.weight)});
  t.add({"provider", c.provider.empty() ? "-" : c.provider});
  t.add({"updated_at", c.updated_at});
  t.add({"total", totalText(c.total)});
  t.add({"priority_class", classText(c.priority_class)});
  t.add({"quiet_hours", orNone(c.quiet_hours)});
  t.add({"time_zone", orNone(c.time_zone)});
  t.add({"frequency_cap", orNone(c.frequency_cap)});
  t.add({"cap_policy", c.cap_policy});
  t.add({"default_ttl", formatTtl(c.default_ttl_ms)});
  t.add({"failover", formatFailover(c.failover)});
  t.add({"routes", formatRoutes(c.routes)});
  t.add({"callback", orNone(c.callback_url)});
  std::string problem;
  if (!campaignInfoOf(c, &problem)) t.add({"invalid", problem + " (pacerd skips it)"});
  t.add({"sent", std::to_string(d.ledger.sent)});
  t.add({"failed", std::to_string(d.ledger.failed)});
  t.add({"rejected", std::to_string(d.ledger.rejected)});
  t.add({"invalid_token", std::to_string(d.ledger.invalid_token)});
  t.add({"suppressed", std::to_string(d.ledger.suppressed)});
  t.add({"expired", std::to_string(d.ledger.expired)});
  t.add({"last_recorded_at", d.ledger.last_recorded_at.empty() ? "-" : d.ledger.last_recorded_at});
  t.add({"parked", std::to_string(d.parked)});
  const ReceiptCounts& r = d.receipts;
  if (r.delivered + r.undelivered + r.expired + r.rejected + r.unknown + r.pending > 0) {
    t.add({"receipts", fmt::format("delivered {}, undelivered {}, expired {}, rejected {}, pending {}", r.delivered,
                                   r.undelivered, r.expired, r.rejected, r.pending)});
  }
  s.out << t.render();
}

void campaignSetRate(Session& s, const Values& v) {
  checkId(v.id, "campaign");
  const Limit l = limitOf(v, "rate");
  const auto c = s.db().setCampaignLimit(v.id, l);
  printChange(s, "campaign", "set-rate", c,
              fmt::format("campaign '{}': {}", v.id, limitChange("send_rate", c.before.limit, c.after.limit)));
}

void campaignSetRules(Session& s, const Values& v) {
  checkId(v.id, "campaign");
  const CampaignRules rules = rulesOf(v);
  if (!rules.any())
    throw InvalidValueError(
        "campaign set-rules: give at least one of --class, --quiet-hours, --time-zone, --cap, --cap-policy");
  const auto c = s.db().setCampaignRules(v.id, rules);
  printChange(s, "campaign", "set-rules", c,
              c.changed ? fmt::format("campaign '{}': {} -> {}", v.id, rulesText(c.before), rulesText(c.after))
                        : fmt::format("campaign '{}': already {}; nothing changed", v.id, rulesText(c.after)));
}

void campaignSetTotal(Session& s, const Values& v) {
  checkId(v.id, "campaign");
  const std::optional<std::int64_t> total =
      *v.total == "unknown" ? std::nullopt : std::optional<std::int64_t>(parseCount(*v.total, "total", 0, "a total"));
  const auto c = s.db().setCampaignTotal(v.id, total);
  printChange(
      s, "campaign", "set-total", c,
      c.changed
          ? fmt::format("campaign '{}': total {} -> {}", v.id, totalText(c.before.total), totalText(c.after.total))
          : fmt::format("campaign '{}': total is already {}; nothing changed", v.id, totalText(c.after.total)));
}

// pause, resume, cancel: `done` is the past tense, `note` what follows.
void campaignState(Session& s, const Values& v, CampaignAction action, const char* done, const char* note) {
  checkId(v.id, "campaign");
  const auto c = s.db().changeCampaignState(v.id, action);
  const std::string human = c.changed
                                ? fmt::format("campaign '{}' {} (was {}){}", v.id, done, c.before.state, note)
                                : fmt::format("campaign '{}' is already {}; nothing changed", v.id, c.after.state);
  printChange(s, "campaign", actionName(action), c, human);
}

void providerCreate(Session& s, const Values& v) {
  checkId(v.id, "provider");
  const Limit l = limitOf(v, "--rate");
  const ProviderRow p = s.db().createProvider(v.id, l);
  if (s.json) return s.emit(Json{{"change", "create"}, {"changed", true}, {"provider", providerJson(p)}});
  s.out << fmt::format("provider '{}' created: rate {}, burst {}\n", p.id, rateText(p.limit.rate),
                       number(p.limit.burst));
}

void providerList(Session& s) {
  const std::vector<ProviderRow> rows = s.db().providers();
  if (s.json) return s.emit(providerListJson(rows));
  if (rows.empty()) {
    s.out << "no providers; `pacerctl provider create ID --rate R` adds one\n";
    return;
  }
  Table t({"ID", "RATE", "BURST", "CAMPAIGNS", "UPDATED (UTC)"}, {false, true, true, true, false});
  for (const ProviderRow& p : rows)
    t.add({validation::shownText(p.id, validation::kMaxIdBytes), rateText(p.limit.rate), number(p.limit.burst),
           std::to_string(p.campaigns), p.updated_at});
  s.out << t.render();
  for (const ProviderRow& p : rows) {
    std::string problem;
    if (!providerInfoOf(p, &problem))
      s.out << fmt::format("invalid: provider '{}' ({}): pacerd skips it and rejects its campaigns' messages\n",
                           validation::shownText(p.id), problem);
  }
}

void providerSetRate(Session& s, const Values& v) {
  checkId(v.id, "provider");
  const Limit l = limitOf(v, "rate");
  const auto c = s.db().setProviderLimit(v.id, l);
  printChange(s, "provider", "set-rate", c,
              fmt::format("provider '{}': {}", v.id, limitChange("rate", c.before.limit, c.after.limit)));
}

}  // namespace

void addCampaignCommands(CLI::App& app, Session& s, Values& v, Commands& commands) {
  CLI::App* campaign = app.add_subcommand("campaign", "create, list, show and change campaigns");
  campaign->require_subcommand(1);
  CLI::App* create = campaign->add_subcommand("create", "add a campaign (state active)");
  idArg(create, v, "campaign");
  limitArgs(create, v, false);
  optionalText(create, "--weight", v.weight, "share of the sink against other campaigns, > 0 (default 1)");
  optionalText(create, "--provider", v.provider, "the provider whose limit it shares (default: none)");
  optionalText(create, "--name", v.name, "a name for people (default: empty)");
  optionalText(create, "--total", v.total,
               "messages the campaign has in all, for the backlog in `pacerctl top` (default: unknown)");
  rulesArgs(create, v);
  commands[create] = [&] { campaignCreate(s, v); };
  commands[campaign->add_subcommand("list", "every campaign with its state and limits")] = [&] { campaignList(s); };
  CLI::App* show = campaign->add_subcommand("show", "one campaign, with its ledger counts and parked messages");
  idArg(show, v, "campaign");
  commands[show] = [&] { campaignShow(s, v); };
  CLI::App* rate = campaign->add_subcommand(
      "set-rate", "change send_rate (and burst; without --burst it becomes the default for the new rate)");
  idArg(rate, v, "campaign");
  limitArgs(rate, v, true);
  commands[rate] = [&] { campaignSetRate(s, v); };
  CLI::App* rules = campaign->add_subcommand(
      "set-rules", "change the priority class, quiet hours, time zone, frequency cap or cap policy (the rest stay)");
  idArg(rules, v, "campaign");
  rulesArgs(rules, v);
  commands[rules] = [&] { campaignSetRules(s, v); };
  CLI::App* total = campaign->add_subcommand(
      "set-total", "set how many messages the campaign has in all (a number, or unknown), for the backlog in top");
  idArg(total, v, "campaign");
  optionalText(total, "total", v.total, "messages in all, or unknown")->required();
  commands[total] = [&] { campaignSetTotal(s, v); };
  const auto state = [&](const char* name, const char* help, CampaignAction action, const char* done,
                         const char* note) {
    CLI::App* cmd = campaign->add_subcommand(name, help);
    idArg(cmd, v, "campaign");
    commands[cmd] = [&s, &v, action, done, note] { campaignState(s, v, action, done, note); };
  };
  state("pause", "stop sending a campaign's messages (they wait; nothing is dropped)", CampaignAction::kPause, "paused",
        "");
  state("resume", "send a paused campaign's messages again", CampaignAction::kResume, "resumed", "");
  state("cancel", "stop a campaign for good: pacerd fails its remaining messages with reason 'cancelled'",
        CampaignAction::kCancel, "cancelled",
        "; pacerd fails its remaining messages with reason 'cancelled' as it reads them");
}

void addProviderCommands(CLI::App& app, Session& s, Values& v, Commands& commands) {
  CLI::App* provider = app.add_subcommand("provider", "create, list and change providers");
  provider->require_subcommand(1);
  CLI::App* create = provider->add_subcommand("create", "add a provider (a limit its campaigns share)");
  idArg(create, v, "provider");
  limitArgs(create, v, false);
  commands[create] = [&] { providerCreate(s, v); };
  commands[provider->add_subcommand("list", "every provider with its limit and campaign count")] = [&] {
    providerList(s);
  };
  CLI::App* rate = provider->add_subcommand(
      "set-rate", "change a provider's rate (and burst; without --burst it becomes the default for the new rate)");
  idArg(rate, v, "provider");
  limitArgs(rate, v, true);
  commands[rate] = [&] { providerSetRate(s, v); };
}

}  // namespace pacer::control::cli
