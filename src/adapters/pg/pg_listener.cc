#include "pacer/ledger/pg_listener.h"

#include <pqxx/pqxx>

#include "pg_common.h"

namespace pacer::ledger {
namespace {

// Collects what get_notifs() hands over; poll() takes it.
class Receiver final : public pqxx::notification_receiver {
 public:
  Receiver(pqxx::connection_base& c, const std::string& channel, std::vector<std::string>& into)
      : pqxx::notification_receiver(c, channel), into_(into) {}
  void operator()(const std::string& payload, int /*backend_pid*/) override { into_.push_back(payload); }

 private:
  std::vector<std::string>& into_;
};

}  // namespace

struct PgListener::Impl {
  PgLedgerOptions options;
  std::string channel;
  std::unique_ptr<pqxx::connection> conn;
  std::unique_ptr<Receiver> receiver;  // destroyed before conn (it unregisters itself)
  std::vector<std::string> arrived;

  void drop() noexcept {
    // Closed first, so the receiver's destructor does not send UNLISTEN over
    // a dead connection (libpqxx would try to reconnect to do it).
    if (conn) conn->disconnect();
    receiver.reset();
    conn.reset();
  }

  [[noreturn]] void lost(const std::string& why) {
    drop();
    throw LedgerUnavailableError(fmt::format("LISTEN connection lost: {}", hidePasswords(why, options.conninfo)));
  }
};

PgListener::PgListener(PgLedgerOptions options, std::string channel) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->channel = std::move(channel);
}

PgListener::~PgListener() {
  if (impl_) impl_->drop();
}

void PgListener::connect() {
  Impl& m = *impl_;
  m.drop();
  try {
    m.conn = std::make_unique<pqxx::connection>(withConnectTimeout(m.options.conninfo, m.options.connect_timeout_s));
    m.receiver = std::make_unique<Receiver>(*m.conn, m.channel, m.arrived);
    // add_receiver() swallows a broken connection during LISTEN: check.
    if (!m.conn->is_open()) m.lost("closed while sending LISTEN");
  } catch (const LedgerUnavailableError&) {
    throw;
  } catch (const std::exception& e) {
    m.drop();
    throw LedgerUnavailableError(
        fmt::format("PostgreSQL unreachable for LISTEN: {}", hidePasswords(e.what(), m.options.conninfo)));
  }
}

bool PgListener::connected() const noexcept { return impl_->conn != nullptr; }

std::vector<std::string> PgListener::poll() {
  Impl& m = *impl_;
  if (!m.conn) return {};
  try {
    // get_notifs() returns 0 quietly on a connection it already knows is
    // closed, hence the checks on either side.
    if (!m.conn->is_open()) m.lost("connection closed");
    m.conn->get_notifs();
    if (!m.conn->is_open()) m.lost("connection closed by the server");
  } catch (const LedgerUnavailableError&) {
    throw;
  } catch (const std::exception& e) {
    m.lost(e.what());
  }
  std::vector<std::string> out;
  out.swap(m.arrived);
  return out;
}

int PgListener::backendPid() const noexcept { return impl_->conn ? impl_->conn->backendpid() : 0; }

}  // namespace pacer::ledger
