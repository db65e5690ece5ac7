// pacerctl's pure half: what an operator may type (ids, rates, bursts,
// weights), which campaign state changes are allowed, the NOTIFY payload,
// and the error kinds with the exit code each one means. No I/O; unit-tested.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "pacer/conninfo.h"  // redactConninfo, used with these
#include "pacer/error.h"
#include "pacer/worker.h"  // CampaignInfo, ProviderInfo

namespace pacer::control {

// Exit codes, the same for every command (README "pacerctl").
enum class ExitCode : int {
  kOk = 0,
  kRefused = 1,       // not found, already exists, or a state change that is not allowed
  kUsage = 2,         // bad arguments or an invalid value
  kUnreachable = 3,   // PostgreSQL (or Kafka, or pacerd's admin listener) could not be reached
  kDatabase = 4,      // PostgreSQL answered but is not usable: no Pacer schema, or a statement refused
  kUnauthorized = 5,  // the credentials were refused: PostgreSQL's user/password, or the admin token
};

// Every error pacerctl reports is one of these; the message says what to do.
class ControlError : public Error {
 public:
  ControlError(ExitCode code, const std::string& what, ErrorKind kind) : Error(kind, what), code_(code) {}
  ExitCode code() const noexcept { return code_; }

 private:
  ExitCode code_;
};
class NotFoundError : public ControlError {
 public:
  explicit NotFoundError(const std::string& what) : ControlError(ExitCode::kRefused, what, ErrorKind::kInvalid) {}
};
class RefusedError : public ControlError {  // duplicate id, state change not allowed
 public:
  explicit RefusedError(const std::string& what) : ControlError(ExitCode::kRefused, what, ErrorKind::kRejected) {}
};
class InvalidValueError : public ControlError {
 public:
  explicit InvalidValueError(const std::string& what) : ControlError(ExitCode::kUsage, what, ErrorKind::kInvalid) {}
};
class UnreachableError : public ControlError {
 public:
  explicit UnreachableError(const std::string& what)
      : ControlError(ExitCode::kUnreachable, what, ErrorKind::kUnavailable) {}
};
// Credentials refused: PostgreSQL's user or password, or pacerd's admin token.
class UnauthorizedError : public ControlError {
 public:
  explicit UnauthorizedError(const std::string& what)
      : ControlError(ExitCode::kUnauthorized, what, ErrorKind::kRejected) {}
};
class DatabaseError : public ControlError {
 public:
  explicit DatabaseError(const std::string& what) : ControlError(ExitCode::kDatabase, what, ErrorKind::kRejected) {}
};

// The LISTEN/NOTIFY channel every change is announced on.
inline constexpr std::string_view kControlChannel = "pacer_control";

// A rate and burst as stored: rate nullopt is unlimited (NULL in the table).
struct Limit {
  std::optional<double> rate;  // messages per second, 0 to 10,000,000
  double burst = 1;            // messages, >= 1
};

// A campaign as the campaigns table holds it: the one campaign model. The
// core's view of it (CampaignInfo: what a worker needs to pace it) is made
// from it by campaignInfoOf, with the row's checks; the table's columns and
// their reading are in one place (src/adapters/pg/table_rows.h).
struct CampaignRow {
  std::string id;
  std::string name;
  std::string state;  // active, paused, cancelled, completed
  Limit limit;        // send_rate (nullopt: unlimited) and burst
  double weight = 1;
  std::string provider;               // empty: none
  std::string updated_at;             // UTC, ISO 8601 (2026-11-23T09:00:00Z)
  std::optional<std::int64_t> total;  // messages the campaign has in all; nullopt: unknown
  // Priority and recipient rules (migration 8, docs/recipient-rules.md), as stored.
  std::string priority_class;           // empty (NULL): pacerd's default class
  std::string quiet_hours;              // "21:00-08:00"; empty (NULL): none
  std::string time_zone;                // IANA zone for messages without a `tz` header; empty: none
  std::string frequency_cap;            // "3/24h"; empty (NULL): none
  std::string cap_policy = "suppress";  // suppress or defer
  std::int64_t default_ttl_ms = 0;      // a message's lifetime from its read (migration 10); 0 (NULL): none
  std::vector<std::string> failover;    // providers after `provider`, in order (migration 12, docs/routes.md)
  std::vector<PrefixRoute> routes;      // prefix routes (migration 13, docs/routes.md)
  std::string callback_url;             // outcome events are POSTed here (migration 14); empty: none
};

// A provider as the providers table holds it.
struct ProviderRow {
  std::string id;
  Limit limit;
  std::int64_t campaigns = 0;  // campaigns that name this provider
  std::string updated_at;
};

// The core's view of a row, or nullopt with the reason for a row that fails
// its checks (a state this build does not know, a rate or weight out of range,
// a frequency_cap or quiet_hours that does not parse, an unknown cap_policy,
// quiet hours without a time_zone). Whether time_zone names a zone and
// priority_class a configured class is pacerd's to check: carried as text.
std::optional<CampaignInfo> campaignInfoOf(const CampaignRow& row, std::string* problem);
std::optional<ProviderInfo> providerInfoOf(const ProviderRow& row, std::string* problem);

// "unlimited", or a number of messages per second (0 to 10,000,000, as the
// limiters accept). `flag` names the argument in the error.
std::optional<double> parseRate(std::string_view text, std::string_view flag);
// A burst in messages: a finite number >= 1.
double parseBurst(std::string_view text, std::string_view flag);
// A scheduling weight: a finite number, 0 < weight <= 1,000,000.
double parseWeight(std::string_view text, std::string_view flag);

// A count of messages (a campaign's total, --count): a whole number from
// `min` to 1,000,000,000,000 written in digits only ("1e3", "-1", "5.0" and
// "" are refused). `what` says what the number is for in the error.
std::int64_t parseCount(std::string_view text, std::string_view flag, std::int64_t min, std::string_view what);
inline constexpr std::int64_t kMaxCount = 1'000'000'000'000;

// The burst used when none is given: 10 ms of the rate plus one
// (ceil(rate / 100) + 1), so pacerd's tick (5 ms by default) can reach the
// rate; 1 for an unlimited rate, where burst does not apply.
double defaultBurst(std::optional<double> rate);

// Builds the limit from the parsed values; a burst given with an unlimited
// rate is refused (it would have no effect).
Limit makeLimit(std::optional<double> rate, std::optional<double> burst);

// The recipient rules as pacerctl takes them (`campaign create`, `campaign
// set-rules`); each returns the text to store ("" for NULL) or throws
// InvalidValueError naming `flag` and the accepted forms.
// A priority class: 1 to 64 of A-Z a-z 0-9 _ - . ; "default" (pacerd's
// default class) is stored as NULL.
std::string parseClassName(std::string_view text, std::string_view flag);
// HH:MM-HH:MM (parseQuietWindow's forms), normalised ("21:00-08:00"); "none"
// (or a window that starts where it ends) is "".
std::string parseQuietHoursText(std::string_view text, std::string_view flag);
// An IANA zone name as typed (1 to 64 of A-Z a-z 0-9 / _ - +), or "none"
// (""). Whether the zone exists is pacerd's check (its tz database).
std::string parseTimeZoneText(std::string_view text, std::string_view flag);
// LIMIT/WINDOW (parseFrequencyCap's forms), as typed ("3/24h"); "none" is "".
std::string parseFrequencyCapText(std::string_view text, std::string_view flag);
// "suppress" or "defer".
std::string parseCapPolicyText(std::string_view text, std::string_view flag);
// A message lifetime: whole seconds ("300") or a number with a unit
// ("90s", "5m", "2h", "1d"), within validation::ttlProblem's bounds; "none"
// (or "0") is 0. Returns milliseconds.
std::int64_t parseTtlText(std::string_view text, std::string_view flag);
// Milliseconds as parseTtlText reads them back: "5m", "90s", "1500ms"; 0: "none".
std::string formatTtl(std::int64_t ms);
// A failover list: provider ids separated by ',' ("sms-b,sms-c"), checked by
// validation::failoverProblem except against the provider; "none" or "" is
// an empty list.
std::vector<std::string> parseFailoverText(std::string_view text, std::string_view flag);
// The list as parseFailoverText reads it; empty: "none".
std::string formatFailover(const std::vector<std::string>& failover);
// Prefix routes: PREFIX=PROVIDER entries separated by ',' ("44=sms-uk,1=sms-us",
// a '+' before a prefix is dropped), checked by prefixRoutesProblem except
// against the campaign's provider; "none" or "" is no routes.
std::vector<PrefixRoute> parseRoutesText(std::string_view text, std::string_view flag);
// The routes as parseRoutesText reads them; empty: "none".
std::string formatRoutes(const std::vector<PrefixRoute>& routes);
// A callback URL, checked by validation::callbackUrlProblem; "none" or "" is
// none (returns "").
std::string parseCallbackUrlText(std::string_view text, std::string_view flag);

// Campaign and provider ids: 1 to 256 bytes of UTF-8 without control
// characters (a campaign id is the Kafka key, README "Message contract").
// `what` is "campaign" or "provider".
void checkId(std::string_view id, std::string_view what);
// A campaign's display name: at most 1024 bytes of UTF-8 without control characters.
void checkName(std::string_view name);

// Campaign states (the CHECK constraint of migration 1) and operator actions.
enum class CampaignAction { kPause, kResume, kCancel, kSetRate, kSetRules };
// "pause", "resume", "cancel", "set-rate", "set-rules"
std::string_view actionName(CampaignAction a) noexcept;

struct Transition {
  enum class Kind { kChange, kAlready, kRefused } kind;
  std::string next_state;  // kChange: the new state (set-rate keeps the state)
  std::string reason;      // kRefused: why, and what to do instead
};
// What `action` does to a campaign `id` in `state`:
//   pause:    active -> paused;    paused: already; cancelled, completed: refused
//   resume:   paused -> active;    active: already; cancelled, completed: refused
//   cancel:   active, paused -> cancelled; cancelled: already; completed: refused
//   set-rate, set-rules: active, paused: change (state kept); cancelled, completed: refused
Transition decideTransition(CampaignAction action, std::string_view state, std::string_view id);

// The NOTIFY payload: {"kind":"campaign","id":"c1","change":"set-rate"}.
std::string notifyPayload(std::string_view kind, std::string_view id, std::string_view change);

// A NOTIFY payload as a listener (pacerd) reads it back.
struct ControlNotice {
  std::string kind;    // "campaign" or "provider"
  std::string id;      // the row that changed
  std::string change;  // "create", "set-rate", "pause", ...; kept as sent (a newer pacerctl may add some)
};
// The notice in `payload`, or nullopt when it is not one: not a JSON object,
// a kind other than campaign/provider, an empty id, a missing or non-string
// field. Extra fields are ignored. Never throws.
std::optional<ControlNotice> parseNotifyPayload(std::string_view payload) noexcept;

}  // namespace pacer::control
