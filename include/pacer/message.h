// The message contract between Kafka and Pacer (see README "Message contract"):
//   key              = campaign id (required, UTF-8, at most 256 bytes)
//   header message-id = the message's id; absent: "<topic>:<partition>:<offset>"
//   header recipient  = optional; passed to the sink
//   header tz         = optional; the recipient's IANA time zone (quiet hours)
//   header pacer-expires-at = optional; the message's deadline: RFC 3339
//                      ("2026-11-26T15:30:00Z", an offset or fraction allowed)
//                      or Unix epoch milliseconds ("1795710600000"); past it
//                      the message is `expired`, never sent
//   value            = the payload, passed to the sink unchanged
// A message over the configured size, or with a key or id that cannot be
// used, is rejected with a reason (a ledger row), never dropped silently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pacer {

// Where a message sits in Kafka.
struct Position {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
};

// A Kafka record as read, before Pacer looks at it.
struct RawMessage {
  Position position;
  std::optional<std::string> key;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
  std::string value;
};

// A message Pacer can schedule.
struct Message {
  Position position;
  std::string id;         // idempotency key
  std::string campaign;   // Kafka key
  std::string recipient;  // may be empty
  std::string payload;
  std::string time_zone;  // the `tz` header; empty: the campaign's default zone
  // The deadline, Unix epoch milliseconds: the `pacer-expires-at` header,
  // tightened by the campaign's default_ttl_ms when it is read; 0: none.
  std::int64_t expires_at_ms = 0;
  // What the message says (campaign, recipient, payload), hashed: the same
  // id with another fingerprint is another message reusing the id.
  std::uint64_t fingerprint = 0;
  // The provider the worker hands this attempt to: its campaign's provider,
  // or the one it fails over to (docs/routes.md). Set at each submit; a
  // routing sink sends by it. Empty: the campaign's (or none).
  std::string provider;
};

// FNV-1a over campaign, recipient and payload, with separators. Pure.
std::uint64_t contentFingerprint(const Message& m) noexcept;

struct DecodeOptions {
  std::size_t max_message_bytes = 1 << 20;  // key + headers + value
};

struct Decoded {
  std::optional<Message> message;  // set when the message is usable
  std::string reason;              // why not, otherwise
  std::string id;                  // when rejected: the id to record it under (its usable
                                   // message-id header, else its position id)
};

// Pure; never throws for bad input.
Decoded decodeMessage(RawMessage raw, const DecodeOptions& options);

// The name of the deadline header.
inline constexpr std::string_view kExpiresAtHeader = "pacer-expires-at";

// Parses a deadline: RFC 3339 date-time ("2026-11-26T15:30:00Z", with
// fractional seconds and a "+hh:mm" offset allowed) or Unix epoch
// milliseconds (1 to 15 digits). Returns the deadline in epoch milliseconds,
// or nullopt with `why` set. Pure; never throws.
std::optional<std::int64_t> parseDeadline(std::string_view text, std::string& why);
// A deadline in RFC 3339, UTC, with milliseconds: "2026-11-26T15:30:00.000Z". Pure.
std::string formatDeadline(std::int64_t epoch_ms);

// Well-formed UTF-8 without control characters: safe in logs, keys and SQL
// text. Campaign ids (the Kafka key) must be this; so must pacerctl's ids.
bool usableText(std::string_view s);

// The id a message gets when it has no message-id header.
std::string positionId(const Position& p);

}  // namespace pacer
