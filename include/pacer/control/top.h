// `pacerctl top`'s arithmetic and rendering, kept pure so it is tested
// without a database, a clock or a terminal: the achieved rate from two
// samples, the backlog, progress and ETA, the progress bar, and one frame
// as text or JSON. pg_top.cc supplies the numbers, cli_top.cc the loop.
// Every function here is thread-safe (no shared state) and reads no clock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pacer/control/why.h"

namespace pacer::control {

// A campaign's count of `sent` ledger rows as of `at_s` (seconds on any clock
// that does not go backwards; top uses the database's).
struct RateSample {
  double at_s = 0;
  std::int64_t sent = 0;
};

// Messages per second between two samples: (newer.sent - older.sent) /
// (newer.at_s - older.at_s). nullopt when the span is not positive (time
// stood still or went back) or the count went down (not one series).
std::optional<double> achievedRate(const RateSample& older, const RateSample& newer) noexcept;

// What is left of a campaign.
struct Backlog {
  std::int64_t messages = 0;
  bool lower_bound = false;  // true: the total is unknown, `messages` counts only the parked ones
};

// With a known total: total - done, never below 0 (more rows than the total
// says were produced means the total is stale, not that work is owed).
// Without one: the parked messages, as a lower bound (queued in a worker's
// memory or still in Kafka is not visible from the database).
Backlog backlogOf(std::optional<std::int64_t> total, std::int64_t done, std::int64_t parked) noexcept;

// done / total in [0, 1]; 1 for a total of 0; nullopt when the total is unknown.
std::optional<double> progressOf(std::optional<std::int64_t> total, std::int64_t done) noexcept;

// Seconds until the backlog is gone at `rate` msg/s: backlog / rate. 0 for a
// known backlog of 0; nullopt when the rate is unknown or not above 0, or the
// backlog is an unknown total with nothing parked. A lower-bound backlog gives
// a lower-bound ETA (the caller shows it with the backlog's mark).
std::optional<double> etaSeconds(const Backlog& backlog, std::optional<double> rate) noexcept;

// "[#####...........] 31%": `width` cells, filled = floor(fraction * width),
// percent rounded down, so a full bar and 100% mean done. Fractions outside
// [0, 1] are clamped; nullopt or NaN gives "-".
std::string progressBar(std::optional<double> fraction, int width);

// "0s", "42s", "3m07s", "2h05m", ">99h"; seconds rounded up; nullopt, NaN or
// negative gives "-".
std::string formatDuration(std::optional<double> seconds);

// One campaign as top shows it: what the database says...
struct TopRow {
  std::string id;
  std::string state;                  // active or paused
  std::string provider;               // empty: none
  std::optional<double> send_rate;    // configured, msg/s; nullopt: unlimited
  std::optional<std::int64_t> total;  // nullopt: unknown
  std::int64_t sent = 0;
  std::int64_t failed = 0;
  std::int64_t rejected = 0;
  std::int64_t invalid_token = 0;  // dead push tokens: finished, like failed
  std::int64_t suppressed = 0;     // refused by a frequency cap: finished, like failed
  std::string priority_class;      // empty: pacerd's default class
  std::int64_t parked = 0;
  // Of them, waiting in PostgreSQL for quiet hours to end, or for a deferred
  // frequency cap (TopSnapshot::Campaign): cluster-wide, known without --admin.
  std::int64_t parked_quiet = 0, parked_capped = 0;
  std::optional<double> achieved;  // sent msg/s over the window; nullopt: unknown
  // Delivery receipts (SMPP) of its sent messages; has_receipts false: none
  // of its messages carry a provider id, the columns show "-".
  bool has_receipts = false;
  std::int64_t delivered = 0, undelivered = 0, receipts_pending = 0;  // undelivered: also expired, rejected
  std::string limited_code, limited_text;  // what limits it now (limitedByOf); empty: not worked out
  // From a worker's state document (--admin); nullopt: not known. Its
  // messages waiting there for a retry, for quiet hours, for a frequency
  // cap, and the retries of its messages (every worker's when counted in Redis).
  std::optional<std::uint64_t> retry_waiting, quiet_waiting, cap_waiting, retries_total;
  // Every worker's retries of it per second lately (top --redis); nullopt: not known.
  std::optional<double> retries_per_s;
};

// One provider as top shows it.
struct TopProviderRow {
  std::string id;
  std::optional<double> rate;       // configured quota, msg/s; nullopt: unlimited
  std::int64_t campaigns = 0;       // live campaigns on it
  double achieved = 0;              // its campaigns' achieved rates together
  std::optional<double> effective;  // the rate its campaigns share now (from a worker's API); nullopt: not known
  std::optional<bool> paused;       // a 429/503 pause in force; nullopt: not known
  std::optional<std::uint64_t> throttled;      // 429/503 answers; nullopt: not known
  std::optional<std::uint64_t> server_errors;  // 5xx answers; nullopt: not known
  // true: those counts are every worker's since the cluster's counts began
  // (a worker with --redis); false: only the asked worker's since it started.
  bool cluster_counts = false;
  std::optional<bool> circuit_open;  // its circuit breaker, as the asked worker holds it; nullopt: not known
  std::optional<bool> degraded;      // the global quota does not answer for it (the asked worker); nullopt: not known
  std::optional<double> server_errors_per_s;  // the asked worker's 5xx answers per second lately; nullopt: not known
  bool reported = false;  // the asked worker knows its state (or Redis shares one): else its health is unknown
  std::string health_code, health_text;       // healthOf(); empty: not worked out
};


// The share of its finished messages that failed (failed, rejected, dead
// token) in percent, rounded to a tenth; nullopt before any finished.
std::optional<double> failedPercentOf(const TopRow& row) noexcept;

// ...and what top works out from it.
struct TopFigures {
  Backlog backlog;
  std::optional<double> progress;
  std::optional<double> eta_s;
};
TopFigures figuresOf(const TopRow& row) noexcept;

struct TopFrame {
  std::string at_utc;   // when the sample was taken, "2026-11-23T13:40:05Z"
  double window_s = 5;  // the achieved rate's window
  std::vector<TopRow> rows;
  std::vector<TopProviderRow> providers;
  // Messages queued in a worker's memory per priority class ("" the default
  // class), from its state document (--admin); empty: not known.
  std::map<std::string, std::uint64_t> worker_class_queued;
};

// Works out each provider's health (healthOf) and each campaign's "limited
// by" (limitedByOf) from the frame's own figures (the providers' effective
// rate, pause, breaker and 5xx, the campaigns' waiting messages, where known).
void fillLimitedBy(TopFrame& frame);

// One priority class's campaigns in a frame, by class name (empty: the
// default class), for the per-class line of top and its JSON.
struct TopClass {
  std::string name;  // empty: the default class
  std::int64_t campaigns = 0;
  std::int64_t backlog = 0;
  bool backlog_lower_bound = false;
  double achieved = 0;
  std::optional<std::uint64_t> queued;  // in the --admin worker's memory; nullopt: not known
};
std::vector<TopClass> classesOf(const TopFrame& frame);

// The frame as text, at most `width` columns: a header line with the time
// and totals, a line per priority class when a campaign names one ("class
// bulk: 3 campaigns, backlog 1200, 40.0/s", and ", queued 40 in the worker"
// when known), a blank line, the campaigns (ID
// STATE CLASS PROVIDER RATE ACHIEVED SENT FAILED SUPPR BACKLOG PROGRESS ETA
// LIMITED-BY, and DLVRD UNDLV PEND when a campaign has delivery receipts;
// CLASS only when a campaign names one, SUPPR only when one has suppressed
// rows; FAIL% only when one has failed rows), then the providers (QUOTA
// EFFECTIVE ACHIEVED PAUSED 429s 5XX CAMPAIGNS). LIMITED BY in words: own rate, provider,
// prov paused, breaker, paused, done, no input, nothing (below every limit), - (not
// known yet). Columns that do not fit are dropped, the least useful first
// (FAILED, PROVIDER, STATE, ETA at 80 columns). A backlog or ETA that is a lower bound is shown with ">=".
std::string renderTopText(const TopFrame& frame, int width = 80);

// The frame as JSON (pretty-printed): {"at", "window_s", "totals": {...},
// "classes": [{"class" (null: default), "campaigns", "backlog",
// "backlog_lower_bound", "achieved_rate", "worker_queued" (null: not known)}],
// "campaigns": [{"id", "state", "priority_class" (null: default), "provider", "send_rate", "achieved_rate",
// "total", "sent", "failed", "rejected", "invalid_token", "suppressed", "parked", "backlog",
// "backlog_lower_bound", "progress", "eta_s", "limited_by": {"code", "text"},
// "receipts": {"delivered", "undelivered", "pending"}}], "providers": [{"id",
// "rate", "campaigns", "achieved_rate", "effective_rate", "paused",
// "throttled_total", "server_errors_total", "counts_from" ("cluster",
// "worker"), "circuit" ("open", "closed")}]}; campaigns also carry
// "failed_pct"; unknown values are null.
std::string renderTopJson(const TopFrame& frame);

// `frame` redrawn over the previous one on an ANSI terminal: cursor home
// (ESC[H), each line followed by erase-to-end-of-line (ESC[K) so a shorter
// line leaves nothing of the longer one behind, then erase below (ESC[J).
std::string terminalRedraw(const std::string& frame);

// For `pacerctl produce --rate R`: when message `index` (from 0) is due,
// in seconds after the first, so that any N messages take (N - 1) / R s.
// Rate <= 0 or NaN: 0 (no pacing).
double produceDueS(std::int64_t index, double rate) noexcept;

}  // namespace pacer::control
