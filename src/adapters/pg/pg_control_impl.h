// PgControl's state, shared by the files that implement it (pg_control.cc:
// campaigns, providers and status; pg_top.cc: top; pg_tokens.cc: the invalid_tokens
// export). Private to pacer::pg.
#pragma once

#include <fmt/format.h>

#include <map>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <string_view>

#include "pacer/conninfo.h"
#include "pacer/control/pg_control.h"

namespace pacer::control {

// One consistent snapshot for the reads that count (campaign show, status, top).
using SnapshotRead = pqxx::transaction<pqxx::repeatable_read, pqxx::read_only>;

inline bool lostConnection(const std::string& sqlstate) {
  // 08: connection exceptions; 57P: the server is shutting down or restarting.
  return sqlstate.rfind("08", 0) == 0 || sqlstate.rfind("57P", 0) == 0;
}

struct PgControl::Impl {
  // What topSnapshot() has counted for good: per campaign, its ledger rows
  // recorded before `cutoff` (the database's own timestamp, as text, so the
  // next refresh splits at exactly the same instant).
  struct Tally {
    std::int64_t sent = 0, failed = 0, rejected = 0, invalid_token = 0, suppressed = 0;
  };
  struct TopState {
    std::map<std::string, Tally> settled;
    std::string cutoff;  // empty: nothing counted yet
  };
  TopState top;

  std::string conninfo;
  std::string shown;  // the conninfo without its password, for messages
  std::unique_ptr<pqxx::connection> conn;
  int schema_version = 0;

  // A connection that failed: refused credentials (the server answered
  // SQLSTATE class 28, which libpq reports only as text) or no server.
  [[noreturn]] void unreachable(const std::string& detail) const {
    if (refusedCredentials(detail))
      throw UnauthorizedError(
          fmt::format("unauthorized: PostgreSQL at '{}' refused the credentials: {}; check the user and password in "
                      "--postgres (or PACER_POSTGRES)",
                      shown, detail));
    throw UnreachableError(fmt::format(
        "cannot reach PostgreSQL at '{}': {}; check --postgres (or PACER_POSTGRES) and that the server is running",
        shown, detail));
  }

  static bool refusedCredentials(std::string_view detail) {
    for (const char* sign : {"password authentication failed", "authentication failed for user", "no password supplied",
                             "does not exist", "no pg_hba.conf entry", "pg_hba.conf rejects"})
      if (detail.find(sign) != std::string_view::npos && detail.find("database \"") == std::string_view::npos)
        return true;
    return false;
  }

  // Runs `fn` and turns libpqxx's errors into ControlErrors.
  template <typename Fn>
  auto guarded(Fn&& fn) {
    try {
      return fn();
    } catch (const ControlError&) {
      throw;
    } catch (const pqxx::in_doubt_error& e) {
      throw UnreachableError(fmt::format(
          "the connection to PostgreSQL was lost while committing, so the change may or may not have been made; "
          "look with `pacerctl campaign show` / `pacerctl provider list` ({})",
          said(e)));
    } catch (const pqxx::broken_connection& e) {
      unreachable(said(e));
    } catch (const pqxx::foreign_key_violation& e) {
      // A provider removed between the check and the insert.
      throw NotFoundError(fmt::format("a provider named by the campaign does not exist ({})", said(e)));
    } catch (const pqxx::sql_error& e) {
      if (lostConnection(e.sqlstate())) unreachable(said(e));
      throw DatabaseError(fmt::format("PostgreSQL refused the statement ({}): {}", e.sqlstate(), said(e)));
    } catch (const pqxx::failure& e) {
      unreachable(said(e));
    }
  }

  // A library's message, on one line and without the connection's passwords.
  std::string said(const std::exception& e) const { return hidePasswords(oneLine(e.what()), conninfo); }

  static std::string oneLine(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    for (char& c : text)
      if (c == '\n' || c == '\t') c = ' ';
    return text;
  }
};

}  // namespace pacer::control
