// A suspended answer of the admin listener (admin_listener.cc): the
// connection waits until another thread completes it, then libmicrohttpd's
// thread sends it.
#pragma once

#include <microhttpd.h>

#include <mutex>
#include <optional>

#include "pacer/admin/admin_server.h"

namespace pacer::admin {

// An answer PendingReply::complete() delivers: the connection waits
// suspended until then.
class Pending final : public PendingReply {
 public:
  explicit Pending(MHD_Connection* c) : connection_(c) {}
  void complete(AdminResponse response) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (answer_ || gone_) return;
    try {
      answer_ = std::move(response);
    } catch (...) {
      return;
    }
    if (suspended_) {
      suspended_ = false;
      MHD_resume_connection(connection_);
    }
  }
  // On the listener's thread: suspends the connection unless the answer is
  // already there. True when suspended.
  bool suspendUnlessAnswered() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (answer_) return false;
    suspended_ = true;
    MHD_suspend_connection(connection_);
    return true;
  }
  std::optional<AdminResponse> take() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::move(answer_);
  }
  void gone() {
    std::lock_guard<std::mutex> lock(mutex_);
    gone_ = true;
  }

 private:
  std::mutex mutex_;
  MHD_Connection* connection_;
  std::optional<AdminResponse> answer_;
  bool suspended_ = false;
  bool gone_ = false;
};

}  // namespace pacer::admin
