#include "flow.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace pacer::sim {
namespace {

// A backlogged campaign's backlog: more than any simulation can send.
constexpr std::uint64_t kEndless = std::uint64_t{1} << 60;
// Held messages one campaign may have at once (each is kept individually).
constexpr std::size_t kMaxParked = 10'000'000;
// Sends (distinct zone and instant) kept for the quiet-hours oracle before it checks them.
constexpr std::size_t kOracleBatch = 1 << 20;

}  // namespace

Flow::Flow(const Scenario& s, std::size_t index, std::int64_t tick_ns, FrequencyCapStore* caps, QuietHours* quiet)
    : c_(s.campaigns[index]),
      tick_ns_(tick_ns),
      start_utc_(s.start_utc),
      caps_(caps),
      quiet_(quiet),
      per_message_(c_.cap.has_value() || c_.quiet_hours.has_value()),
      lifetime_ns_(c_.lifetimeS() ? std::optional<double>(*c_.lifetimeS() * 1e9) : std::nullopt),
      scope_(fmt::format("campaign:{}", index)) {
  out_.priority_class = c_.class_name;
  out_.capped = c_.cap.has_value();
  out_.quiet = c_.quiet_hours.has_value();
  out_.lifetime_s = c_.lifetimeS();
  if (c_.cap) cap_oracle_.emplace(*c_.cap);
  if (c_.quiet_hours) {
    for (const std::string& name : c_.time_zones) zones_.push_back(quiet_->table().require(name));
    quiet_sends_.resize(zones_.size());
  }
}

std::uint64_t Flow::start(std::uint64_t k) {
  k0_ = k;
  if (c_.arrival_per_s) return 0;
  arrived_ = c_.messages.value_or(kEndless);
  if (arrived_ > 0) fresh_.emplace_back(k, arrived_);
  return arrived_;
}

std::uint64_t Flow::due(std::uint64_t k) {
  std::uint64_t n = 0;
  if (c_.arrival_per_s) {
    // Message n arrives at start + n / arrival_per_s and is offered at the
    // first tick at or after that.
    const double per_tick = *c_.arrival_per_s * static_cast<double>(tick_ns_) / 1e9;
    const double total = std::floor(static_cast<double>(k - k0_) * per_tick + 1e-9) + 1;
    const std::uint64_t until = std::min(static_cast<std::uint64_t>(total), c_.messages.value_or(kEndless));
    if (until > arrived_) {
      fresh_.emplace_back(k, until - arrived_);
      n += until - arrived_;
      arrived_ = until;
    }
  }
  while (!parked_.empty() && parked_.top().due_tick <= k) {
    const Msg m = parked_.top().msg;
    parked_.pop();
    if (lifetime_ns_ && expiredAt(k, m.seq)) {
      ++out_.expired;  // its deadline passed while held
      continue;
    }
    ready_.push_back(m);
    ++n;
  }
  return n;
}

std::uint64_t Flow::expire(std::uint64_t k) {
  if (!lifetime_ns_) return 0;
  const std::uint64_t before = out_.expired;
  out_.expired += std::erase_if(ready_, [&](const Msg& m) { return expiredAt(k, m.seq); });
  // Fresh messages are seqs next_seq_, next_seq_ + 1, ... in arrival order,
  // so the expired ones are a prefix.
  std::uint64_t fresh = 0;
  for (const auto& [tick, count] : fresh_) fresh += count;
  std::uint64_t n = 0;
  if (fresh > 0 && expiredAt(k, next_seq_)) {
    if (!c_.arrival_per_s) {
      n = fresh;  // a backlog arrived all at once
    } else {
      // The last expired seq: arrival + lifetime <= k's instant.
      const double room_ns = static_cast<double>(k - k0_) * static_cast<double>(tick_ns_) - *lifetime_ns_;
      const auto last = static_cast<std::uint64_t>(std::floor(std::max(0.0, room_ns) * *c_.arrival_per_s / 1e9 + 1e-9));
      n = last + 1 > next_seq_ ? std::min(fresh, last + 1 - next_seq_) : 0;
    }
  }
  next_seq_ += n;
  out_.expired += n;
  for (std::uint64_t left = n; left > 0;) {
    auto& [tick, count] = fresh_.front();
    const std::uint64_t m = std::min(left, count);
    count -= m;
    left -= m;
    if (count == 0) fresh_.pop_front();
  }
  return out_.expired - before;
}

double Flow::arrivalNs(std::uint64_t seq) const {
  const double start = static_cast<double>(k0_) * static_cast<double>(tick_ns_);
  return c_.arrival_per_s ? start + static_cast<double>(seq) * 1e9 / *c_.arrival_per_s : start;
}

bool Flow::expiredAt(std::uint64_t k, std::uint64_t seq) const {
  return arrivalNs(seq) + *lifetime_ns_ <= static_cast<double>(k) * static_cast<double>(tick_ns_) + 0.5;
}

std::uint64_t Flow::take(std::uint64_t k, std::uint64_t n) {
  std::uint64_t sent = 0;
  taken_.clear();
  if (!per_message_) {                               // no rules: retries first, then whole batches in arrival order
    for (; n > 0 && !ready_.empty(); --n, ++sent) {  // only retries: their waits are recorded
      taken_.push_back(ready_.front().seq);
      ready_.pop_front();
    }
    while (n > 0 && !fresh_.empty()) {
      auto& [tick, count] = fresh_.front();
      const std::uint64_t m = std::min(n, count);
      if (c_.arrival_per_s)
        for (std::uint64_t seq = next_seq_; seq < next_seq_ + m; ++seq) recordWait(k, seq);
      if (lifetime_ns_)
        for (std::uint64_t seq = next_seq_; seq < next_seq_ + m; ++seq) taken_.push_back(seq);
      count -= m;
      n -= m;
      next_seq_ += m;
      sent += m;
      if (count == 0) fresh_.pop_front();
    }
    sent_ += sent;
    return sent;
  }
  for (; n > 0; --n) {
    Msg m;
    if (!ready_.empty()) {
      m = ready_.front();
      ready_.pop_front();
    } else if (!fresh_.empty()) {
      m = Msg{next_seq_++, false};
      if (--fresh_.front().second == 0) fresh_.pop_front();
    } else {
      break;
    }
    if (!dispatch(k, m)) continue;
    ++sent;
    if (lifetime_ns_) taken_.push_back(m.seq);
  }
  sent_ += sent;
  return sent;
}

void Flow::retry(std::uint64_t due_tick, const std::vector<std::uint64_t>& seqs) {
  for (const std::uint64_t seq : seqs) {
    if (parked_.size() >= kMaxParked) {
      throw ScenarioError(fmt::format("campaigns ({}): more than {} refused messages waiting for their retry at once",
                                      c_.id, kMaxParked));
    }
    parked_.push(Parked{due_tick, Msg{seq, false, true}});
  }
  sent_ -= seqs.size();
}

bool Flow::dispatch(std::uint64_t k, Msg& m) {
  const WallTime now = wallAt(k);
  const std::size_t zone = zones_.empty() ? 0 : m.seq % zones_.size();
  if (c_.quiet_hours) {
    const QuietCheck q = quiet_->check(zones_[zone], *c_.quiet_hours, now);
    if (q.quiet) {
      if (!m.held_quiet) ++out_.quiet_held;
      m.held_quiet = true;
      park(k, q.allowed_at, m);
      return false;
    }
  }
  if (c_.cap && !capAllows(k, now, m)) return false;
  if (c_.quiet_hours) recordQuietSend(zone, now);
  if (c_.arrival_per_s && !m.retried) recordWait(k, m.seq);
  return true;
}

// Asks the cap store (which counts the send when it allows it); a capped
// message is suppressed or parked until the cap allows it.
bool Flow::capAllows(std::uint64_t k, WallTime now, Msg& m) {
  const std::uint64_t recipient = m.seq % c_.recipients;
  recipient_.clear();
  fmt::format_to(std::back_inserter(recipient_), "r{}", recipient);
  const CapQuery q{recipient_, scope_, c_.cap->limit, c_.cap->window};
  CapDecision d;
  caps_->decide({&q, 1}, now, {&d, 1});
  if (d.verdict == CapVerdict::kAllowed) {
    cap_oracle_->sent(recipient, now.time_since_epoch().count());
    return true;
  }
  if (d.verdict != CapVerdict::kCapped) {
    throw ScenarioError(fmt::format("campaign {}: the frequency cap store answered '{}' at {} ms", c_.id,
                                    toString(d.verdict), now.time_since_epoch().count()));
  }
  if (c_.cap_policy == CapPolicy::kSuppress) {
    ++out_.suppressed;
  } else {
    ++out_.deferred;
    park(k, d.at, m);
  }
  return false;
}

void Flow::park(std::uint64_t k, WallTime allowed_at, const Msg& m) {
  if (parked_.size() >= kMaxParked) {
    throw ScenarioError(fmt::format(
        "campaigns ({}): more than {} messages held at once by quiet hours or the cap (about {} MiB): give it fewer "
        "messages or a lower rate",
        c_.id, kMaxParked, kMaxParked * sizeof(Parked) >> 20));
  }
  const std::int64_t ms = (allowed_at - start_utc_).count();
  std::uint64_t due = k + 1;
  if (ms > 0) {
    const std::int64_t ticks = (ms * 1000000 + tick_ns_ - 1) / tick_ns_;
    due = std::max(due, static_cast<std::uint64_t>(ticks));
  }
  parked_.push(Parked{due, m});
}

WallTime Flow::wallAt(std::uint64_t k) const {
  return start_utc_ + std::chrono::milliseconds{static_cast<std::int64_t>(k) * tick_ns_ / 1000000};
}

void Flow::recordQuietSend(std::size_t zone, WallTime now) {
  std::vector<SendRun>& runs = quiet_sends_[zone];
  const std::int64_t ms = now.time_since_epoch().count();
  if (!runs.empty() && runs.back().at_ms == ms) {
    ++runs.back().count;
    return;
  }
  runs.push_back(SendRun{ms, 1});
  if (++quiet_pending_ >= kOracleBatch) checkQuietSends();
}

void Flow::checkQuietSends() {
  out_.sent_in_quiet_window += sendsInQuietWindow(c_.time_zones, *c_.quiet_hours, quiet_sends_);
  for (std::vector<SendRun>& runs : quiet_sends_) runs.clear();
  quiet_pending_ = 0;
}

// From message seq's arrival instant to tick k, in units of 0.1 ms.
void Flow::recordWait(std::uint64_t k, std::uint64_t seq) {
  const double arrived_ns = static_cast<double>(k0_) * static_cast<double>(tick_ns_) +
                            static_cast<double>(seq) * 1e9 / *c_.arrival_per_s;
  const double wait_ns = static_cast<double>(k) * static_cast<double>(tick_ns_) - arrived_ns;
  waits_[static_cast<std::uint64_t>(std::llround(std::max(0.0, wait_ns) / 1e5))] += 1;
}

bool Flow::done() const {
  return c_.messages && sent_ + out_.suppressed + out_.expired == *c_.messages &&
         (c_.arrival_per_s ? arrived_ == *c_.messages : true);
}

RuleResult Flow::finish(std::uint64_t end) {
  // Held messages whose deadline passed by the end: expired, as the next scan would find them.
  for (; lifetime_ns_ && !parked_.empty(); parked_.pop()) {
    if (expiredAt(end, parked_.top().msg.seq))
      ++out_.expired;
    else
      kept_.push_back(parked_.top());
  }
  for (const Parked& p : kept_) parked_.push(p);
  if (c_.quiet_hours) checkQuietSends();
  RuleResult r = out_;
  if (c_.arrival_per_s) {
    WaitStats w;
    for (const auto& [tenths, n] : waits_) w.count += n;
    auto rank = [&](double q) {
      const auto need = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(w.count)));
      std::uint64_t seen = 0;
      for (const auto& [tenths, n] : waits_) {
        seen += n;
        if (seen >= std::max<std::uint64_t>(need, 1)) return static_cast<double>(tenths) / 10.0;
      }
      return 0.0;
    };
    w.p50_ms = rank(0.5);
    w.p99_ms = rank(0.99);
    w.max_ms = waits_.empty() ? 0.0 : static_cast<double>(waits_.rbegin()->first) / 10.0;
    r.waits = w;
  }
  if (cap_oracle_) r.recipients_over_cap = cap_oracle_->recipientsOverCap();
  r.waiting = parked_.size();
  return r;
}

}  // namespace pacer::sim
