// pacerctl produce: test messages for a campaign into Kafka, added to the
// campaign's total as they are acknowledged.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>

#include "cli_parts.h"
#include "produce.h"

namespace pacer::control::cli {
namespace {

// `pacerctl produce`'s arguments, as typed.
struct ProduceArgs {
  std::optional<std::string> brokers;
  std::string topic;
  std::string campaign;
  std::string count = "1";
  std::optional<std::string> rate;
  std::string recipient_prefix;
  std::optional<std::string> recipients;
  std::optional<std::string> tz;
  std::optional<std::string> time_zones;
  std::string payload = R"({"text":"test message from pacerctl produce"})";
  std::optional<std::string> id_prefix;
  std::optional<int> partition;
  int timeout_ms = 30000;
};

// Kafka topic names: 1 to 249 of [a-zA-Z0-9._-].
void checkTopic(const std::string& topic) {
  const bool ok =
      !topic.empty() && topic.size() <= 249 &&
      topic.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == std::string::npos;
  if (!ok)
    throw InvalidValueError(
        fmt::format("--topic '{}': a Kafka topic is 1 to 249 characters of a-z A-Z 0-9 . _ -", topic));
}

// Unique per run, so a second run's messages are new to the ledger
// (message-id is its idempotency key) instead of skipped as replays.
std::string runIdPrefix(const std::string& campaign) {
  const auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  return fmt::format("{}:{:x}{:x}:", campaign, us, static_cast<unsigned>(::getpid()));
}

// Without --recipient-prefix, --recipients N names them recipient-0 .. recipient-(N-1).
constexpr const char* kDefaultRecipientPrefix = "recipient-";

// The tz header's zones: --tz ZONE (every message) or --time-zones Z1,Z2,...
// (round-robin). pacerd judges whether a zone exists; these are only names.
std::vector<std::string> timeZones(const ProduceArgs& pa) {
  if (pa.tz && pa.time_zones) throw InvalidValueError("--tz and --time-zones: give one of them");
  std::vector<std::string> zones;
  const std::string_view flag = pa.tz ? "--tz" : "--time-zones";
  const std::string list = pa.tz ? *pa.tz : pa.time_zones.value_or("");
  if (!pa.tz && !pa.time_zones) return zones;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = list.find(',', start);
    const std::string zone = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (zone.empty() || zone == "none")
      throw InvalidValueError(fmt::format(
          "{} '{}': give IANA time zone names separated by commas (Europe/London,America/New_York)", flag, list));
    parseTimeZoneText(zone, flag);  // refuses what cannot be a zone's name, naming it
    zones.push_back(zone);
    if (comma == std::string::npos) return zones;
    start = comma + 1;
  }
}

// Checks every value before anything connects.
ProduceOptions produceOptions(const ProduceArgs& pa, const Session& s) {
  ProduceOptions o;
  o.brokers = pa.brokers ? *pa.brokers : s.env.brokers.value_or("");
  if (o.brokers.empty())
    throw InvalidValueError(pa.brokers ? "--brokers: empty; give HOST:PORT,..."
                                       : "no Kafka brokers given: pass --brokers HOST:PORT,... or set PACER_BROKERS");
  checkTopic(pa.topic);
  o.topic = pa.topic;
  checkId(pa.campaign, "campaign");
  o.campaign = pa.campaign;
  o.count = parseCount(pa.count, "--count", 1, "a count");
  if (pa.rate) {
    o.rate = parseRate(*pa.rate, "--rate");
    if (o.rate && *o.rate <= 0) throw InvalidValueError("--rate '0': nothing would ever be sent; give a rate above 0");
  }
  if (pa.partition && *pa.partition < 0) throw InvalidValueError("--partition: must be 0 or more");
  if (pa.timeout_ms < 1) throw InvalidValueError("--timeout-ms: must be at least 1");
  o.timeout_ms = pa.timeout_ms;
  o.recipient_prefix = pa.recipient_prefix;
  if (pa.recipients) {
    o.recipients = parseCount(*pa.recipients, "--recipients", 1, "a number of distinct recipients");
    if (o.recipient_prefix.empty()) o.recipient_prefix = kDefaultRecipientPrefix;
  }
  o.time_zones = timeZones(pa);
  o.payload = pa.payload;
  o.partition = pa.partition;
  if (pa.id_prefix && pa.id_prefix->size() > 200) throw InvalidValueError("--id-prefix: at most 200 bytes");
  o.id_prefix = pa.id_prefix ? *pa.id_prefix : runIdPrefix(o.campaign);
  return o;
}

// The campaign's total, when a database is given: it must exist, and what
// is delivered is added to a known total as it is acknowledged. A database
// error mid-run does not stop producing (the messages are in Kafka already);
// the addition is tried again with the next acknowledgements and reported.
struct TotalKeeper {
  bool with_db = false;
  std::optional<CampaignRow> before, after;
  std::int64_t unadded = 0;  // delivered, not yet added
  std::string error;
  ExitCode code = ExitCode::kDatabase;

  void attach(Session& s, ProduceOptions& o) {
    with_db = s.postgres.has_value() || s.env.postgres.has_value();
    if (!with_db) return;
    before = s.db().campaignRow(o.campaign);
    after = before;
    o.on_delivered = [this, &s, campaign = o.campaign](std::int64_t n) {
      unadded += n;
      try {
        after = s.db().addToCampaignTotal(campaign, unadded);
        unadded = 0;
      } catch (const ControlError& e) {
        error = e.what();
        code = e.code();
      } catch (const std::exception& e) {
        error = e.what();
      }
    };
  }

  std::string note() const {
    if (!with_db) return "total not updated (no --postgres or PACER_POSTGRES)";
    if (unadded > 0) return fmt::format("total NOT updated for {} delivered message(s)", unadded);
    if (!after->total) return "total unknown, not changed (`pacerctl campaign set-total` sets one)";
    return fmt::format("total {} -> {}", totalText(before->total), totalText(after->total));
  }
};

void report(Session& s, const ProduceOptions& o, const ProduceResult& r, const TotalKeeper& t) {
  if (!s.json) {
    s.out << fmt::format("campaign '{}': {} of {} messages delivered to topic '{}' in {:.1f} s; {}\n", o.campaign,
                         r.delivered, o.count, o.topic, r.seconds, t.note());
    return;
  }
  Json j{{"campaign", o.campaign},
         {"topic", o.topic},
         {"requested", o.count},
         {"delivered", r.delivered},
         {"failed", r.failed},
         {"seconds", r.seconds},
         {"total", t.with_db && t.after->total ? Json(*t.after->total) : Json(nullptr)}};
  if (!r.error.empty()) j["error"] = r.error;
  if (t.unadded > 0) j["not_added_to_total"] = t.unadded;
  s.emit(j);
}

// The exit: unreachable, refused, or delivered but not counted.
void failures(const ProduceOptions& o, const ProduceResult& r, const TotalKeeper& t) {
  if (r.unreachable)
    throw UnreachableError(fmt::format(
        "cannot reach Kafka at '{}': {}; check --brokers (or PACER_BROKERS) and that the brokers are running",
        o.brokers, r.error.empty() ? "no broker answered" : r.error));
  if (r.failed > 0) {
    const std::string what = fmt::format("{} of {} messages were not delivered to topic '{}' (first error: {})",
                                         r.failed, o.count, o.topic, r.error);
    if (r.transient) throw UnreachableError(what + "; check that the brokers are up, then produce the rest");
    throw ControlError(ExitCode::kDatabase, what + "; the broker refused them", ErrorKind::kRejected);
  }
  if (t.unadded > 0)
    throw ControlError(t.code,
                       fmt::format("{} delivered message(s) were not added to campaign '{}''s total ({}); do not "
                                   "produce them again: add them with `pacerctl campaign set-total {} N`",
                                   t.unadded, o.campaign, t.error, o.campaign),
                       t.code == ExitCode::kUnreachable ? ErrorKind::kUnavailable : ErrorKind::kRejected);
}

void produce(Session& s, const ProduceArgs& pa) {
  ProduceOptions o = produceOptions(pa, s);
  TotalKeeper total;
  total.attach(s, o);
  const ProduceResult r = produceMessages(o);
  report(s, o, r, total);
  failures(o, r, total);
}

}  // namespace

void addProduceCommand(CLI::App& app, Session& s, Commands& commands) {
  auto pa = std::make_shared<ProduceArgs>();  // lives as long as the command
  CLI::App* cmd = app.add_subcommand(
      "produce",
      "send test messages for a campaign into Kafka (docs/operations.md \"Message contract\"); adds the delivered "
      "ones to the campaign's total when it is known");
  optionalText(cmd, "--brokers", pa->brokers,
               "Kafka bootstrap servers HOST:PORT,... (default: $PACER_BROKERS, else $PACER_KAFKA_BROKERS)");
  cmd->add_option("--topic", pa->topic, "the topic pacerd reads")->required();
  cmd->add_option("--campaign", pa->campaign, "campaign id: the Kafka key of every message")->required();
  cmd->add_option("--count", pa->count, "messages to send")->capture_default_str();
  optionalText(cmd, "--rate", pa->rate, "a rate: 100, 100/s, 6000/min, 100k/h (default: unlimited)");
  cmd->add_option("--recipient-prefix", pa->recipient_prefix,
                  "header recipient = PREFIX + index (default: no recipient header)");
  optionalText(cmd, "--recipients", pa->recipients,
               "spread the recipient header over N distinct ids, PREFIX + (index mod N), so one recipient gets "
               "several messages (default: a new recipient per message; prefix recipient- without "
               "--recipient-prefix)");
  optionalText(cmd, "--tz", pa->tz, "header tz = ZONE on every message: the recipient's IANA time zone");
  optionalText(cmd, "--time-zones", pa->time_zones,
               "header tz round-robin over Z1,Z2,... (message i gets zone i mod the count)");
  cmd->add_option("--payload", pa->payload, "the value of every message")->capture_default_str();
  optionalText(cmd, "--id-prefix", pa->id_prefix,
               "header message-id = PREFIX + index (default: CAMPAIGN:RUN: with RUN unique per run)");
  cmd->add_option("--partition", pa->partition, "this partition (default: by key, one partition per campaign)");
  cmd->add_option("--timeout-ms", pa->timeout_ms, "a message not acknowledged by then fails")->capture_default_str();
  commands[cmd] = [&s, pa] { produce(s, *pa); };
}

}  // namespace pacer::control::cli
