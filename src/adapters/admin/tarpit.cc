#include "tarpit.h"

#include <vector>

namespace pacer::admin {

Tarpit::Tarpit(std::size_t max_held) : max_held_(max_held), thread_([this] { run(); }) {}

Tarpit::~Tarpit() { stop(); }

bool Tarpit::hold(const std::string& address, Nanos delay, std::function<void()> release) {
  const Clock::time_point now = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_ || due_.size() >= max_held_) return false;
    // Addresses whose last answer has left are forgotten (the map stays as
    // small as what is held).
    for (auto it = last_.begin(); it != last_.end();) it = it->second <= now ? last_.erase(it) : std::next(it);
    Clock::time_point& last = last_[address];
    const Clock::time_point at = std::max(now, last) + std::chrono::duration_cast<Clock::duration>(delay);
    last = at;
    due_.emplace(at, std::move(release));
  }
  wake_.notify_one();
  return true;
}

std::size_t Tarpit::held() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return due_.size();
}

void Tarpit::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_ && !thread_.joinable()) return;
    stopped_ = true;
    due_.clear();
  }
  wake_.notify_one();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void Tarpit::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  std::vector<std::function<void()>> ready;
  while (!stopped_) {
    if (due_.empty()) {
      wake_.wait(lock);
      continue;
    }
    const Clock::time_point next = due_.begin()->first;
    if (Clock::now() < next) {
      wake_.wait_until(lock, next);
      continue;
    }
    const Clock::time_point now = Clock::now();
    while (!due_.empty() && due_.begin()->first <= now) {
      ready.push_back(std::move(due_.begin()->second));
      due_.erase(due_.begin());
    }
    lock.unlock();
    for (auto& release : ready) release();  // outside the lock: release() resumes a connection
    ready.clear();
    lock.lock();
  }
}

}  // namespace pacer::admin
