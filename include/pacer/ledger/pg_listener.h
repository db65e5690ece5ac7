// A dedicated PostgreSQL connection that LISTENs on one channel: how pacerd
// hears pacerctl's changes (README "pacerd", live control). libpqxx 6.4.
//
// It never reconnects by itself (libpqxx would do so silently, and blocking,
// on the next statement): a lost connection is reported by poll(), and the
// owner decides when to call connect() again, so it can back off and re-read
// whatever it may have missed meanwhile. Not thread-safe: one owner thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pacer/ledger/pg_ledger.h"

namespace pacer::ledger {

class PgListener {
 public:
  PgListener(PgLedgerOptions options, std::string channel);
  ~PgListener();
  PgListener(const PgListener&) = delete;
  PgListener& operator=(const PgListener&) = delete;

  // Opens a new connection (dropping any old one) and LISTENs on the channel;
  // a notification sent after this returns is delivered. Blocks for up to
  // options.connect_timeout_s. Throws LedgerUnavailableError (password hidden).
  void connect();
  bool connected() const noexcept;

  // The payloads of the notifications that have arrived since the last call,
  // oldest first; empty when not connected. Never blocks (one non-blocking
  // read of the socket). Throws LedgerUnavailableError when the connection
  // turns out to be lost; connected() is false afterwards.
  std::vector<std::string> poll();

  // The server process serving the connection (tests end it to check the
  // reconnect); 0 when not connected.
  int backendPid() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pacer::ledger
