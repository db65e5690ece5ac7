// The one check of every number and name an operator or a table row gives
// Pacer: pacerctl, the JSON API and pacerd's directory loader all ask these,
// so a value one of them accepts is a value every other one can use. Each
// answer is nullopt (usable) or a message that names the field and the
// bound ("send_rate 1e-300 is below the smallest rate, 0.001 per second").
// Pure: no I/O, no clock; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pacer::validation {

// Rates are messages (or the provider's units) per second. The smallest is
// one message in about 17 minutes: below it a token takes longer than the
// quota's keys can live (lease.lua's TTLs) and a rate is a mistake, not a
// pace. The largest is what the limiters accept.
inline constexpr double kMinRate = 0.001;
inline constexpr double kMaxRate = 1e7;
// Bursts are messages that may go at once: 1 to kMaxBurst.
inline constexpr double kMaxBurst = 1e7;
// A scheduling weight: above 0, at most kMaxWeight.
inline constexpr double kMaxWeight = 1e6;
// Campaign and provider ids: 1 to kMaxIdBytes bytes of printable UTF-8 (a
// campaign id is the Kafka key). Campaign names: 0 (none) to kMaxNameBytes.
inline constexpr std::size_t kMaxIdBytes = 256;
inline constexpr std::size_t kMaxNameBytes = 256;
// A campaign's default message lifetime (default_ttl_ms): one second to 30
// days. Under a second no provider can act on it; APNs and FCM keep a
// message for at most about four weeks anyway.
inline constexpr std::int64_t kMinTtlMs = 1'000;
inline constexpr std::int64_t kMaxTtlMs = 30LL * 24 * 3600 * 1000;
// A campaign's failover list: at most this many providers after its own.
inline constexpr std::size_t kMaxFailoverProviders = 4;
// A campaign's callback URL: at most this many bytes.
inline constexpr std::size_t kMaxCallbackUrlBytes = 2048;

// True when `s` is valid UTF-8 without control characters (C0, DEL, C1).
bool printableUtf8(std::string_view s) noexcept;

// `field` is how the caller names the value to its user ("--rate",
// "send_rate", "rate"); the message starts with it.
// A finite rate in [kMinRate, kMaxRate]. NaN, infinities, 0 and negatives are refused.
std::optional<std::string> rateProblem(std::string_view field, double rate);
// A finite burst in [1, kMaxBurst].
std::optional<std::string> burstProblem(std::string_view field, double burst);
// A finite weight in (0, kMaxWeight].
std::optional<std::string> weightProblem(std::string_view field, double weight);
// A lifetime in milliseconds in [kMinTtlMs, kMaxTtlMs].
std::optional<std::string> ttlProblem(std::string_view field, std::int64_t ttl_ms);
// A failover list after `provider`: at most kMaxFailoverProviders usable
// ids (no ','), none twice, none equal to `provider`, and a `provider` to
// fail over from when the list is not empty.
std::optional<std::string> failoverProblem(std::string_view field, std::string_view provider,
                                           const std::vector<std::string>& failover);
// A callback URL: http:// or https:// (any case), a host, at most
// kMaxCallbackUrlBytes of printable ASCII without spaces.
std::optional<std::string> callbackUrlProblem(std::string_view field, std::string_view url);
// An id: 1 to kMaxIdBytes bytes, printable UTF-8. `field` e.g. "campaign id".
std::optional<std::string> idProblem(std::string_view field, std::string_view id);
// A display name: at most kMaxNameBytes bytes, printable UTF-8 (empty: none).
std::optional<std::string> nameProblem(std::string_view field, std::string_view name);

// `s` made safe for one log line or message: control characters, quotes,
// backslashes and bytes that are not UTF-8 escaped (\n, \", \xff), and cut
// after `max` bytes of `s` with the full length said ("abc... (10240 bytes)").
std::string shownText(std::string_view s, std::size_t max = 64);

// A number as a message shows it: "1e-300", "nan", "inf", "150".
std::string numberText(double v);

}  // namespace pacer::validation
