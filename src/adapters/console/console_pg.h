// The console's own reads of the ledger beyond `pacerctl top`'s: a campaign's
// outcomes grouped by whatever statuses the ledger holds (counted
// incrementally, as top counts), and its recent dead letters. One connection
// of its own, opened on first use and again after it broke. Not thread-safe:
// the console's refresher thread owns it. Errors are control::ControlError
// (UnreachableError when PostgreSQL is away, DatabaseError otherwise).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace pacer::console {

struct Outcomes {
  std::map<std::string, std::int64_t> by_status;  // every status the campaign's rows have, with its count
  std::string last_recorded_at;                   // UTC ISO 8601; empty: no row
  std::int64_t parked = 0;
};

struct DeadLetter {
  std::string message_id, status, reason, recorded_at;
  int attempts = 0;
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
};

class ConsolePg {
 public:
  ConsolePg(std::string conninfo, int connect_timeout_s);
  ~ConsolePg();
  ConsolePg(const ConsolePg&) = delete;
  ConsolePg& operator=(const ConsolePg&) = delete;

  // The first call for a campaign counts all its rows; later ones only those
  // recorded since 60 s before the previous call (as PgControl::topSnapshot).
  // Up to kRemembered campaigns are remembered, the least recently asked
  // forgotten first.
  Outcomes outcomes(const std::string& campaign);
  static constexpr std::size_t kRemembered = 64;

  // The newest `limit` rows among the campaign's `scan` newest whose status is
  // neither sent nor delivered, newest first: bounded work however large the
  // campaign.
  std::vector<DeadLetter> deadLetters(const std::string& campaign, int limit = 20, int scan = 5000);

 private:
  template <typename Fn>
  auto guarded(Fn&& fn);
  struct Connection;  // libpqxx's, kept out of this header
  Connection& conn();

  struct Tally {
    std::map<std::string, std::int64_t> settled;
    std::string cutoff;  // the database's timestamp, as text
    std::uint64_t asked = 0;
  };
  std::string conninfo_;
  int connect_timeout_s_;
  std::unique_ptr<Connection> conn_;
  std::map<std::string, Tally> tallies_;
  std::uint64_t asks_ = 0;
};

}  // namespace pacer::console
