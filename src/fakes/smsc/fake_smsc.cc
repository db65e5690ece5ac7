// pacer-fake-smsc's server: one epoll thread serving every connection.
#include "pacer/fakes/fake_smsc.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <map>
#include <stdexcept>
#include <thread>

#include "pacer/smpp/framer.h"
#include "pacer/smpp/receipt.h"
#include "smsc_state.h"

namespace pacer::fake {
namespace {

using namespace pacer::smpp;

struct Conn {
  int fd = -1;
  Framer framer;
  std::string out;
  bool bound = false;
  bool transmits = false;
  bool receives = false;
  bool closing = false;  // close once `out` is written
  int account = -1;
  std::uint32_t seq = 0;
  struct Answer {
    Clock::time_point due;
    std::string bytes;
    std::int64_t part;  // SmscState::answered() handle, -1: none
    std::uint32_t status;
  };
  std::deque<Answer> delayed;  // submit_sm_resp not yet due
  // Receipts sent on this bind and not yet answered with deliver_sm_resp, by
  // sequence number: if the bind goes away they are sent again on another,
  // as an SMSC does, so a worker that dies loses no receipt.
  std::map<std::uint32_t, PendingReceipt> unacked;
};

constexpr int kCmdUnbind = 1;
constexpr int kCmdDrop = 2;

void append(std::string& out, const Pdu& p) { (void)encode(p, out); }

}  // namespace

struct FakeSmsc::Impl {
  explicit Impl(FakeSmscOptions o) : options(std::move(o)), state(options) {}

  FakeSmscOptions options;
  SmscState state;
  int listen_fd = -1, wake_fd = -1, ep = -1;
  std::thread thread;
  std::atomic<bool> stopping{false};
  std::atomic<int> commands{0};
  std::map<int, std::unique_ptr<Conn>> conns;

  void run();
  void acceptAll();
  void readConn(Conn& c, Clock::time_point now);
  void handle(Conn& c, const Pdu& p, Clock::time_point now);
  void bind(Conn& c, const Pdu& p);
  void releaseDue(Conn& c, Clock::time_point now);
  void sendReceipts(Clock::time_point now);
  void flush(Conn& c);
  void runCommands();
  Clock::time_point nextDue();
};

void FakeSmsc::Impl::acceptAll() {
  for (;;) {
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    conns[fd] = std::move(c);
  }
}

void FakeSmsc::Impl::bind(Conn& c, const Pdu& p) {
  Pdu r = makeHeaderOnly(p.command_id | cmd::kRespBit, p.sequence_number);
  r.system_id = "FakeSMSC";
  std::uint32_t st = 0;
  const int account = c.bound ? -1 : state.authenticate(p, st, Clock::now());
  if (c.bound) st = status::kAlyBnd;
  r.command_status = st;
  append(c.out, r);
  if (st != 0) {
    if (!c.bound) c.closing = true;  // a refused bind ends the connection
    return;
  }
  c.bound = true;
  c.account = account;
  c.transmits = p.command_id != cmd::kBindReceiver;
  c.receives = p.command_id != cmd::kBindTransmitter;
}

void FakeSmsc::Impl::handle(Conn& c, const Pdu& p, Clock::time_point now) {
  switch (p.command_id) {
    case cmd::kBindTransceiver:
    case cmd::kBindTransmitter:
    case cmd::kBindReceiver: return bind(c, p);
    case cmd::kSubmitSm: {
      Pdu r = makeHeaderOnly(cmd::kSubmitSmResp, p.sequence_number);
      if (!c.bound || !c.transmits) {
        r.command_status = status::kInvBndSts;
        return append(c.out, r);
      }
      const bool window_full = c.delayed.size() >= options.window;
      std::int64_t part = -1;
      r.command_status = state.submit(static_cast<std::size_t>(c.account), p, window_full, now, r.message_id, &part);
      std::string bytes;
      append(bytes, r);
      c.delayed.push_back(
          {now + std::chrono::milliseconds(options.response_delay_ms), std::move(bytes), part, r.command_status});
      return;
    }
    case cmd::kDeliverSmResp:
      if (c.unacked.erase(p.sequence_number) > 0 && c.account >= 0)
        ++state.accounts()[static_cast<std::size_t>(c.account)].receipts_acked;
      return;
    case cmd::kEnquireLink: return append(c.out, makeHeaderOnly(cmd::kEnquireLinkResp, p.sequence_number));
    case cmd::kUnbind:
      append(c.out, makeHeaderOnly(cmd::kUnbindResp, p.sequence_number));
      c.closing = true;
      return;
    case cmd::kUnbindResp: c.closing = true; return;
    case cmd::kEnquireLinkResp:
    case cmd::kGenericNack: return;
    default:
      if (!isResponse(p.command_id))
        append(c.out, makeHeaderOnly(cmd::kGenericNack, p.sequence_number, status::kInvCmdId));
  }
}

void FakeSmsc::Impl::readConn(Conn& c, Clock::time_point now) {
  for (;;) {
    constexpr std::size_t kChunk = 64 * 1024;
    const ssize_t n = ::recv(c.fd, c.framer.prepare(kChunk), kChunk, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      c.closing = true;
      c.out.clear();
      c.delayed.clear();
      return;
    }
    if (n < 0) break;
    c.framer.commit(static_cast<std::size_t>(n));
    if (static_cast<std::size_t>(n) < kChunk) break;
  }
  std::string_view frame;
  Pdu p;
  for (;;) {
    const Framer::Next next = c.framer.next(frame);
    if (next == Framer::Next::kNeedMore) return;
    if (next == Framer::Next::kBadLength) {
      c.closing = true;
      return;
    }
    const DecodeError e = decode(frame, p);
    if (e == DecodeError::kNone) {
      handle(c, p, now);
    } else if (!isResponse(p.command_id)) {
      append(c.out, makeHeaderOnly(cmd::kGenericNack, p.sequence_number,
                                   e == DecodeError::kUnknownCommand ? status::kInvCmdId : status::kInvCmdLen));
    }
  }
}

void FakeSmsc::Impl::releaseDue(Conn& c, Clock::time_point now) {
  while (!c.delayed.empty() && c.delayed.front().due <= now) {
    c.out += c.delayed.front().bytes;
    state.answered(c.delayed.front().part, c.delayed.front().status);
    c.delayed.pop_front();
  }
}

// Due receipts go to a receiving bind of the submitting account, taken in
// turn; a receipt whose account has none bound waits for one.
void FakeSmsc::Impl::sendReceipts(Clock::time_point now) {
  auto& pending = state.receipts();
  for (auto it = pending.begin(); it != pending.end();) {
    if (it->due > now) break;  // one delay for all: the queue is in due order
    AccountState& a = state.accounts()[it->account];
    std::vector<Conn*> receivers;
    for (auto& [fd, c] : conns)
      if (c->bound && c->receives && !c->closing && c->account == static_cast<int>(it->account))
        receivers.push_back(c.get());
    if (receivers.empty()) {
      ++it;
      continue;
    }
    Conn& c = *receivers[a.next_receiver++ % receivers.size()];
    Pdu d = state.receiptPdu(*it);
    d.sequence_number = ++c.seq;
    append(c.out, d);
    if (it->counted) ++a.receipts_resent;
    if (!it->counted) ++a.receipts_sent[it->outcome];
    it->counted = true;
    c.unacked.emplace(d.sequence_number, std::move(*it));
    it = pending.erase(it);
  }
}

void FakeSmsc::Impl::flush(Conn& c) {
  while (!c.out.empty()) {
    const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n <= 0) {
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      c.out.clear();
      c.closing = true;
      break;
    }
    c.out.erase(0, static_cast<std::size_t>(n));
  }
  epoll_event ev{};
  ev.events = EPOLLIN | (c.out.empty() ? 0u : static_cast<unsigned>(EPOLLOUT));
  ev.data.fd = c.fd;
  epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
}

void FakeSmsc::Impl::runCommands() {
  const int cmds = commands.exchange(0);
  for (auto& [fd, c] : conns) {
    if ((cmds & kCmdDrop) != 0) {
      c->closing = true;
      c->out.clear();
      c->delayed.clear();
    } else if ((cmds & kCmdUnbind) != 0 && c->bound) {
      append(c->out, makeHeaderOnly(cmd::kUnbind, ++c->seq));
      c->bound = false;
    }
  }
}

// The next timer; at most 100 ms away, which is also how soon a receipt
// that waits for a receiving bind is tried again.
Clock::time_point FakeSmsc::Impl::nextDue() {
  const Clock::time_point now = Clock::now();
  Clock::time_point t = now + std::chrono::milliseconds(100);
  std::lock_guard<std::mutex> lock(state.mutex());
  for (const auto& [fd, c] : conns)
    if (!c->delayed.empty()) t = std::min(t, c->delayed.front().due);
  for (const auto& r : state.receipts()) {
    if (r.due > now) {
      t = std::min(t, r.due);
      break;
    }
  }
  return t;
}

void FakeSmsc::Impl::run() {
  epoll_event events[64];
  while (!stopping.load()) {
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(nextDue() - Clock::now()).count();
    const int n = epoll_wait(ep, events, 64, static_cast<int>(std::max<long long>(0, wait)));
    const Clock::time_point now = Clock::now();
    std::lock_guard<std::mutex> lock(state.mutex());
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == listen_fd) {
        acceptAll();
      } else if (fd == wake_fd) {
        std::uint64_t v = 0;
        (void)!::read(wake_fd, &v, sizeof v);
      } else if (auto it = conns.find(fd); it != conns.end() && (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
        readConn(*it->second, now);
      }
    }
    runCommands();
    if (state.outageDue(now)) {
      for (auto& [cfd, c] : conns) {  // every connection dropped without a word
        c->closing = true;
        c->out.clear();
        c->delayed.clear();
      }
    }
    sendReceipts(now);
    for (auto it = conns.begin(); it != conns.end();) {
      Conn& c = *it->second;
      releaseDue(c, now);
      flush(c);
      if (c.closing && c.out.empty()) {
        ::close(c.fd);
        // Unanswered receipts go first to the account's other binds, due now.
        for (auto r = c.unacked.rbegin(); r != c.unacked.rend(); ++r) {
          r->second.due = now;
          state.receipts().push_front(std::move(r->second));
        }
        it = conns.erase(it);
      } else {
        ++it;
      }
    }
    state.flushRecord();
  }
}

FakeSmsc::FakeSmsc(FakeSmscOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

FakeSmsc::~FakeSmsc() { stop(); }

int FakeSmsc::start() {
  Impl& m = *impl_;
  m.listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(m.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(m.options.port));
  if (inet_pton(AF_INET, m.options.host.c_str(), &addr.sin_addr) != 1)
    throw std::runtime_error("fake smsc: --host must be an IPv4 address, got " + m.options.host);
  socklen_t len = sizeof addr;
  if (::bind(m.listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(m.listen_fd, 128) != 0 ||
      getsockname(m.listen_fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::runtime_error("fake smsc: cannot listen on " + m.options.host + ":" + std::to_string(m.options.port));
  }
  m.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  m.ep = epoll_create1(EPOLL_CLOEXEC);
  for (int fd : {m.listen_fd, m.wake_fd}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(m.ep, EPOLL_CTL_ADD, fd, &ev);
  }
  m.thread = std::thread([&m] { m.run(); });
  return ntohs(addr.sin_port);
}

void FakeSmsc::stop() {
  Impl& m = *impl_;
  if (!m.thread.joinable()) return;
  m.stopping = true;
  const std::uint64_t one = 1;
  (void)!::write(m.wake_fd, &one, sizeof one);
  m.thread.join();
  for (auto& [fd, c] : m.conns) ::close(fd);
  m.conns.clear();
  for (int fd : {m.listen_fd, m.wake_fd, m.ep}) ::close(fd);
  m.state.flushRecord();
}

nlohmann::json FakeSmsc::report() const {
  std::lock_guard<std::mutex> lock(impl_->state.mutex());  // the server thread changes conns only under it
  nlohmann::json r = impl_->state.report();
  for (auto& account : r["accounts"]) account["receipts_unacked"] = 0;
  for (const auto& [fd, c] : impl_->conns) {
    if (c->account < 0 || c->unacked.empty()) continue;
    const std::string& id = impl_->state.accounts()[static_cast<std::size_t>(c->account)].config.system_id;
    nlohmann::json& unacked = r["accounts"][id]["receipts_unacked"];
    unacked = unacked.get<std::size_t>() + c->unacked.size();
  }
  return r;
}

void FakeSmsc::unbindAll() {
  impl_->commands |= kCmdUnbind;
  const std::uint64_t one = 1;
  (void)!::write(impl_->wake_fd, &one, sizeof one);
}

void FakeSmsc::dropAll() {
  impl_->commands |= kCmdDrop;
  const std::uint64_t one = 1;
  (void)!::write(impl_->wake_fd, &one, sizeof one);
}

}  // namespace pacer::fake
