#include "pacer/outbox_window.h"

#include <algorithm>

namespace pacer {

OutboxWindow::OutboxWindow(std::size_t limit) : limit_(std::max<std::size_t>(limit, 1)) {}

bool OutboxWindow::mayRead(std::size_t n) const noexcept {
  if (failed_) return false;
  const std::size_t held = in_flight_.size() + acked_.size();
  return held == 0 || held + n <= limit_;
}

void OutboxWindow::produced(std::span<const std::int64_t> ids) {
  for (std::int64_t id : ids) {
    in_flight_.insert(id);
    after_ = std::max(after_, id);
  }
}

bool OutboxWindow::report(std::int64_t id, bool acknowledged) {
  if (in_flight_.erase(id) == 0) return false;
  if (acknowledged) acked_.push_back(id);
  else failed_ = true;
  return true;
}

std::vector<std::int64_t> OutboxWindow::takeAcknowledged() {
  std::vector<std::int64_t> out;
  out.swap(acked_);
  std::sort(out.begin(), out.end());
  return out;
}

void OutboxWindow::giveBack(std::span<const std::int64_t> ids) { acked_.insert(acked_.end(), ids.begin(), ids.end()); }

bool OutboxWindow::rewind() noexcept {
  if (!settled()) return false;
  after_ = 0;
  failed_ = false;
  return true;
}

}  // namespace pacer
