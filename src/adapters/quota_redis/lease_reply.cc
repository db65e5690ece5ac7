#include "lease_reply.h"

#include <algorithm>
#include <chrono>

namespace pacer {
namespace {

constexpr std::size_t kFields = 10;
// The longest wait the script can mean (a day), in microseconds: anything
// larger is a bad reply, not a wait.
constexpr long long kMaxMicros = 86'400'000'000LL;

Nanos wait(long long us) { return us < 0 ? kNever : Nanos(std::chrono::microseconds(std::min(us, kMaxMicros))); }

}  // namespace

bool parseLeaseReply(const redisReply& r, const LeaseRequest& req, LeaseReply& out) noexcept {
  if (r.type != REDIS_REPLY_ARRAY || r.elements != kFields || r.element == nullptr) return false;
  long long v[kFields];
  for (std::size_t i = 0; i < kFields; ++i) {
    const redisReply* e = r.element[i];
    if (e == nullptr || e->type != REDIS_REPLY_INTEGER) return false;
    v[i] = e->integer;
  }
  if (v[0] < 0 || static_cast<unsigned long long>(v[0]) > req.want) return false;
  if (v[3] < 0 || static_cast<unsigned long long>(v[3]) >= req.levels.size()) return false;
  if (v[5] < 0 || v[5] > kMaxMicros || v[7] < 0 || v[7] > UINT32_MAX || (v[8] != 0 && v[8] != 1) || v[9] < 0)
    return false;
  LeaseReply reply;
  reply.status = QuotaStatus::kOk;
  reply.granted = static_cast<std::uint64_t>(v[0]);
  reply.next_token = wait(v[1]);
  reply.full_in = wait(v[2]);
  reply.binding = static_cast<std::uint32_t>(v[3]);
  reply.effective_rate = v[4] < 0 ? 0.0 : static_cast<double>(v[4]) / 1000.0;
  reply.paused = Nanos(std::chrono::microseconds(v[5]));
  reply.start_tokens = static_cast<double>(v[6]) / 1e6;
  reply.active_workers = static_cast<std::uint32_t>(v[7]);
  reply.circuit_open = v[8] == 1;
  reply.schedule_rate = static_cast<double>(v[9]) / 1e6;
  out = reply;
  return true;
}

}  // namespace pacer
