#include "event_hub_impl.h"

namespace pacer::admin {

EventHub::EventHub() : impl_(std::make_unique<Impl>()) {}
EventHub::~EventHub() = default;

void EventHub::publish(std::string frame) {
  auto shared = std::make_shared<const std::string>(std::move(frame));
  std::shared_ptr<const std::string> old;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  old = std::move(impl_->frame);
  impl_->frame = std::move(shared);
  ++impl_->seq;
  if (!impl_->closed) impl_->wakeAllLocked();
}

std::size_t EventHub::streams() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->streams.size();
}

}  // namespace pacer::admin
