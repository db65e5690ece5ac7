// Helpers shared by the PostgreSQL adapters (ledger, parking, directory):
// array literals for unnest() batches and the translation of libpqxx's
// errors into the ledger's two error types. Private to pacer::pg.
#pragma once

#include <fmt/format.h>

#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <string_view>
#include <vector>

#include "pacer/conninfo.h"
#include "pacer/ledger/pg_ledger.h"

namespace pacer::ledger {

// Any key that identifies Pacer's migration lock among advisory locks.
inline constexpr long long kMigrationLockKey = 0x7061636572;  // "pacer"

// A PostgreSQL array literal of text: {"a","b\"c"}.
inline std::string textArray(const std::vector<std::string_view>& items) {
  std::size_t size = 2;
  for (std::string_view item : items) size += item.size() + 3;
  std::string out;
  out.reserve(size + size / 8);
  out += '{';
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += '"';
    const std::string_view item = items[i];
    if (item.find_first_of("\"\\") == std::string_view::npos) {
      out += item;  // the common case: nothing to escape
    } else {
      for (char c : item) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
      }
    }
    out += '"';
  }
  out += '}';
  return out;
}

template <typename T>
inline std::string numberArray(const std::vector<T>& items) {
  std::string out = "{";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(items[i]);
  }
  out += '}';
  return out;
}

// Runs `fn(connection)`, turning libpqxx's errors into the ledger's.
template <typename Fn>
auto guarded(std::unique_ptr<pqxx::connection>& conn, const PgLedgerOptions& options, Fn&& fn) {
  try {
    if (!conn || !conn->is_open()) {
      // In the string's own syntax: appended as " key=value", a URL would break.
      conn = std::make_unique<pqxx::connection>(withConnectTimeout(options.conninfo, options.connect_timeout_s));
    }
    return fn(*conn);
  } catch (const pqxx::broken_connection& e) {
    conn.reset();
    // libpq may quote a piece of the connection string, a password too.
    throw LedgerUnavailableError(fmt::format("PostgreSQL unreachable: {}", hidePasswords(e.what(), options.conninfo)));
  } catch (const pqxx::in_doubt_error& e) {
    conn.reset();
    throw LedgerUnavailableError(fmt::format("PostgreSQL commit in doubt: {}", e.what()));
  } catch (const pqxx::sql_error& e) {
    // Lost connections also surface as SQL errors with a 08xxx state.
    const std::string state = e.sqlstate();
    if (state.rfind("08", 0) == 0 || state.rfind("57P", 0) == 0) {
      conn.reset();
      throw LedgerUnavailableError(fmt::format("PostgreSQL unreachable: {}", e.what()));
    }
    throw LedgerRejectedError(fmt::format("PostgreSQL refused the statement ({}): {}", state, e.what()));
  } catch (const pqxx::failure& e) {
    conn.reset();
    throw LedgerUnavailableError(fmt::format("PostgreSQL failure: {}", e.what()));
  }
}

// A PostgreSQL bytea[] literal, each element hex-encoded: {"\\x0a0b"}.
inline std::string byteaArray(const std::vector<std::string_view>& items) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "{";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += "\"\\\\x";
    for (unsigned char c : items[i]) {
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
    out += '"';
  }
  out += '}';
  return out;
}

}  // namespace pacer::ledger
