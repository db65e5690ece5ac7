#include "pacer/callback_queue.h"

#include <algorithm>

namespace pacer {

CallbackAnswer classifyCallbackStatus(long http_status) noexcept {
  if (http_status >= 200 && http_status <= 299) return CallbackAnswer::kAccepted;
  if (http_status == 0 || http_status == 408 || http_status == 429 || (http_status >= 500 && http_status <= 599))
    return CallbackAnswer::kRetry;
  return CallbackAnswer::kRefused;
}

CallbackQueue::CallbackQueue(CallbackPolicy policy) : policy_(policy) {
  policy_.capacity = std::max<std::size_t>(policy_.capacity, 1);
  policy_.max_attempts = std::max(policy_.max_attempts, 1);
  policy_.first_backoff = std::max(policy_.first_backoff, Nanos(0));
  policy_.max_backoff = std::max(policy_.max_backoff, policy_.first_backoff);
}

std::size_t CallbackQueue::room() const noexcept { return held() >= policy_.capacity ? 0 : policy_.capacity - held(); }

bool CallbackQueue::admit(std::int64_t id, std::string campaign, MonoTime now) {
  if (room() == 0 || events_.contains(id)) return false;
  events_.emplace(id, Event{std::move(campaign), 0, false, now});
  waiting_.emplace(now, id);
  after_ = std::max(after_, id);
  return true;
}

std::vector<std::int64_t> CallbackQueue::takeDue(MonoTime now, std::size_t max) {
  std::vector<std::int64_t> out;
  auto it = waiting_.begin();
  while (it != waiting_.end() && it->first <= now && out.size() < max) {
    events_.at(it->second).in_flight = true;
    out.push_back(it->second);
    it = waiting_.erase(it);
  }
  in_flight_ += out.size();
  return out;
}

Nanos CallbackQueue::backoff(int attempts) const noexcept {
  Nanos d = policy_.first_backoff;
  for (int i = 1; i < attempts && d < policy_.max_backoff; ++i) d *= 2;
  return std::min(d, policy_.max_backoff);
}

CallbackQueue::Verdict CallbackQueue::answer(std::int64_t id, long http_status, MonoTime now) {
  const auto it = events_.find(id);
  if (it == events_.end() || !it->second.in_flight) return Verdict::kUnknown;
  Event& e = it->second;
  e.in_flight = false;
  --in_flight_;
  ++e.attempts;
  const CallbackAnswer a = classifyCallbackStatus(http_status);
  if (a == CallbackAnswer::kRetry && e.attempts < policy_.max_attempts) {
    ++retried_;
    e.due = now + backoff(e.attempts);
    waiting_.emplace(e.due, id);
    return Verdict::kRetry;
  }
  const bool done = a == CallbackAnswer::kAccepted;
  if (done) {
    ++accepted_;
  } else {
    ++gave_up_;
    CallbackGiveUps& g = give_ups_[e.campaign];
    g.campaign = e.campaign;
    ++g.count;
    g.last_status = http_status;
  }
  finished_.push_back(id);
  events_.erase(it);
  return done ? Verdict::kDone : Verdict::kGaveUp;
}

std::vector<std::int64_t> CallbackQueue::takeFinished() {
  std::vector<std::int64_t> out;
  out.swap(finished_);
  std::sort(out.begin(), out.end());
  return out;
}

void CallbackQueue::giveBack(const std::vector<std::int64_t>& ids) {
  finished_.insert(finished_.end(), ids.begin(), ids.end());
}

std::vector<CallbackGiveUps> CallbackQueue::takeGiveUps() {
  std::vector<CallbackGiveUps> out;
  out.reserve(give_ups_.size());
  for (auto& [campaign, g] : give_ups_) out.push_back(std::move(g));
  give_ups_.clear();
  return out;
}

std::optional<MonoTime> CallbackQueue::nextDue() const {
  if (waiting_.empty()) return std::nullopt;
  return waiting_.begin()->first;
}

bool CallbackQueue::rewind() noexcept {
  if (held() != 0) return false;
  after_ = 0;
  return true;
}

}  // namespace pacer
