// Waiting on a condition with a deadline: what integration tests do instead
// of sleeping a fixed time and hoping it was long enough.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace pacer::testing {

// Checks `done` until it is true or `limit` has passed; between checks it
// waits on a condition variable for `step` (no busy loop). Returns done().
inline bool waitUntil(const std::function<bool()>& done, std::chrono::milliseconds limit,
                      std::chrono::milliseconds step = std::chrono::milliseconds(2)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::mutex m;
  std::condition_variable never;
  std::unique_lock<std::mutex> lock(m);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    never.wait_for(lock, step);  // nobody notifies: a bounded wait between checks
  }
  return true;
}

}  // namespace pacer::testing
