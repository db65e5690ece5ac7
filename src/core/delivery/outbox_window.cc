#include "pacer/outbox_window.h"

#include <algorithm>

namespace pacer {

OutboxWindow::OutboxWindow(std::size_t limit) : limit_(std::max<std::size_t>(limit, 1)) {}

void OutboxWindow::restart(std::int64_t stored_cursor) {
  after_ = stored_ = stored_cursor;
  in_flight_.clear();
  failed_ids_.clear();
  acked_.clear();
}

bool OutboxWindow::mayRead(std::size_t n) const noexcept {
  if (failed()) return false;
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
  if (acknowledged) acked_.insert(id);
  else failed_ids_.insert(id);
  return true;
}

std::int64_t OutboxWindow::cursor() const noexcept {
  std::int64_t c = after_;
  if (!in_flight_.empty()) c = std::min(c, *in_flight_.begin() - 1);
  if (!failed_ids_.empty()) c = std::min(c, *failed_ids_.begin() - 1);
  return std::max(c, stored_);
}

std::size_t OutboxWindow::stored(std::int64_t cursor) {
  stored_ = std::max(stored_, cursor);
  const auto end = acked_.upper_bound(stored_);
  const auto n = static_cast<std::size_t>(std::distance(acked_.begin(), end));
  acked_.erase(acked_.begin(), end);
  return n;
}

std::vector<std::int64_t> OutboxWindow::stranded() const {
  return std::vector<std::int64_t>(acked_.upper_bound(cursor()), acked_.end());
}

std::size_t OutboxWindow::removed(std::span<const std::int64_t> ids) {
  std::size_t n = 0;
  for (std::int64_t id : ids) n += acked_.erase(id);
  return n;
}

std::size_t OutboxWindow::storable() const noexcept {
  return static_cast<std::size_t>(std::distance(acked_.begin(), acked_.upper_bound(cursor())));
}

bool OutboxWindow::rewind() noexcept {
  if (!settled()) return false;
  after_ = stored_;
  failed_ids_.clear();
  return true;
}

}  // namespace pacer
