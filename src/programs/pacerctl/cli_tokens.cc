// pacerctl tokens export|count: the dead push tokens pacerd recorded
// (invalid_tokens), for the operator to prune the audience with.
#include <fmt/format.h>

#include "cli_parts.h"
#include "pacer/control/tokens.h"

namespace pacer::control::cli {
namespace {

// The arguments of `tokens export` and `tokens count`, as typed.
struct TokenArgs {
  std::optional<std::string> provider;
  std::optional<std::string> since;
  std::optional<std::string> format;
};

// Checked before connecting: an empty --provider is refused, not taken as all.
TokenFilter filterOf(const TokenArgs& a) {
  TokenFilter f;
  if (a.provider) {
    checkId(*a.provider, "provider");
    f.provider = *a.provider;
  }
  if (a.since) f.since = parseSinceTime(*a.since, "--since");
  return f;
}

// csv unless --format json, or --json without --format.
bool asJson(const Session& s, const TokenArgs& a) {
  if (!a.format) return s.json;
  if (*a.format == "json") return true;
  if (*a.format == "csv" && !s.json) return false;
  if (*a.format == "csv") throw InvalidValueError("--format csv and --json disagree; give one of them");
  throw InvalidValueError(fmt::format("--format: '{}' is not a format; give csv or json", *a.format));
}

// Streams the rows as they are read: a JSON array with one token per line,
// or CSV with its header (the header alone when there is no token).
void tokensExport(Session& s, const TokenArgs& a) {
  const TokenFilter f = filterOf(a);
  const bool json = asJson(s, a);
  PgControl& db = s.db();
  if (!json) {
    s.out << tokenCsvHeader();
    db.invalidTokens(f, [&](const InvalidTokenRow& r) { s.out << tokenCsvLine(r); });
    return;
  }
  bool first = true;
  db.invalidTokens(f, [&](const InvalidTokenRow& r) {
    s.out << (first ? "[\n  " : ",\n  ") << tokenJson(r).dump();
    first = false;
  });
  s.out << (first ? "[]\n" : "\n]\n");
}

void tokensCount(Session& s, const TokenArgs& a) {
  const TokenFilter f = filterOf(a);
  const std::int64_t n = s.db().countInvalidTokens(f);
  if (s.json)
    return s.emit(Json{{"count", n},
                       {"provider", f.provider ? Json(*f.provider) : Json(nullptr)},
                       {"since", a.since ? Json(*a.since) : Json(nullptr)}});
  s.out << n << '\n';
}

void filterArgs(CLI::App* cmd, TokenArgs& a) {
  optionalText(cmd, "--provider", a.provider, "only this provider's tokens (default: every provider)");
  optionalText(cmd, "--since", a.since,
               "only tokens last seen dead at or after this time: 2026-11-23, 2026-11-23T08:00:00Z, "
               "2026-11-23T09:00:00+01:00 (no zone: UTC)");
}

}  // namespace

void addTokenCommands(CLI::App& app, Session& s, Commands& commands) {
  auto a = std::make_shared<TokenArgs>();  // lives as long as the commands
  CLI::App* tokens =
      app.add_subcommand("tokens", "the push tokens providers called dead (APNs 410/BadDeviceToken, FCM UNREGISTERED)");
  tokens->require_subcommand(1);
  CLI::App* exp = tokens->add_subcommand(
      "export", "every dead token to stdout by provider and token: CSV with a header line (default) or JSON");
  filterArgs(exp, *a);
  optionalText(exp, "--format", a->format, "csv or json (default: csv; --json means json)");
  commands[exp] = [&s, a] { tokensExport(s, *a); };
  CLI::App* count = tokens->add_subcommand("count", "how many dead tokens there are (a number alone on a line)");
  filterArgs(count, *a);
  commands[count] = [&s, a] { tokensCount(s, *a); };
}

}  // namespace pacer::control::cli
