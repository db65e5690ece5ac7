// Answers held back for a while (the admin listener's slowed 429s): each is
// released by a thread of its own at its time, so the listener's thread and
// other clients never wait for them. Answers to one address leave one delay
// apart, so a guesser gains nothing from opening more connections; at most
// `max_held` answers are held in all. Thread-safe. Reads the steady clock
// (an adapter: the delay is real time on the wire).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "pacer/time.h"

namespace pacer::admin {

class Tarpit {
 public:
  explicit Tarpit(std::size_t max_held);
  ~Tarpit();  // stop()
  Tarpit(const Tarpit&) = delete;
  Tarpit& operator=(const Tarpit&) = delete;

  // Calls `release` (on the tarpit's thread) `delay` after the previous
  // answer held for `address` is released, or after now if none is. False
  // (and `release` dropped) when `max_held` are held already or it stopped.
  bool hold(const std::string& address, Nanos delay, std::function<void()> release);
  // Answers held now.
  std::size_t held() const;
  // Ends the thread; what is still held is dropped without a call (the
  // listener answers those itself while it stops).
  void stop();

 private:
  using Clock = std::chrono::steady_clock;
  void run();

  const std::size_t max_held_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::multimap<Clock::time_point, std::function<void()>> due_;
  std::map<std::string, Clock::time_point> last_;  // each address's latest release time
  bool stopped_ = false;
  std::thread thread_;
};

}  // namespace pacer::admin
