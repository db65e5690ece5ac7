// Dead push tokens as `pacerctl tokens export` writes them (CSV or JSON) and
// the --since time it takes. Pure: the rows come from PgControl.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace pacer::control {

using Json = nlohmann::ordered_json;  // as in json_docs.h

// One row of the invalid_tokens table (migration 7): a push token that a
// provider called dead, as pacerd counted it.
struct InvalidTokenRow {
  std::string provider;            // the campaign's provider id ('' for none)
  std::string token;               // the message's recipient
  std::string reason;              // the last answer's reason
  std::string first_seen;          // UTC, 2026-11-23T08:00:00Z
  std::string last_seen;           // UTC, likewise
  std::string provider_timestamp;  // UTC; empty: the provider named no time (FCM)
  std::string campaign;            // the first campaign that hit it
  std::int64_t hits = 0;           // delivery rows that found it dead
};

// The CSV header line, with its newline:
// provider,token,reason,first_seen,last_seen,provider_timestamp,campaign,hits
std::string tokenCsvHeader();
// One CSV line (RFC 4180) with its newline: a field holding a comma, a
// double quote, CR or LF is quoted, its quotes doubled; an absent
// provider_timestamp is an empty field.
std::string tokenCsvLine(const InvalidTokenRow& row);
// {"provider", "token", "reason", "first_seen", "last_seen",
// "provider_timestamp" (null: none), "campaign", "hits"}
Json tokenJson(const InvalidTokenRow& row);

// A --since time: YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS[.fraction]] (a space
// may stand for the T), then Z, +HH:MM or -HH:MM; no zone means UTC.
// Returns it in a form PostgreSQL reads as timestamptz whatever the
// session's time zone; throws InvalidValueError naming `flag` otherwise.
std::string parseSinceTime(std::string_view text, std::string_view flag);

}  // namespace pacer::control
