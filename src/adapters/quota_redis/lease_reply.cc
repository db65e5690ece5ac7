#include "lease_reply.h"

#include <algorithm>
#include <chrono>

namespace pacer {
namespace {

constexpr std::size_t kFields = 15;
// The longest wait the script can mean (a day), in microseconds: anything
// larger is a bad reply, not a wait.
constexpr long long kMaxMicros = 86'400'000'000LL;

Nanos wait(long long us) { return us < 0 ? kNever : Nanos(std::chrono::microseconds(std::min(us, kMaxMicros))); }

// The script's typed refusal {-1, code, level}: a level it cannot hold.
bool parseRefusal(const redisReply& r, const LeaseRequest& req, LeaseReply& out) noexcept {
  if (r.elements != 3 || req.levels.empty()) return false;
  long long v[3];
  for (std::size_t i = 0; i < 3; ++i) {
    const redisReply* e = r.element[i];
    if (e == nullptr || e->type != REDIS_REPLY_INTEGER) return false;
    v[i] = e->integer;
  }
  // The level may be the class's own bucket, one past the request's levels.
  if (v[0] != -1 || (v[1] != 1 && v[1] != 2) || v[2] < 0 || static_cast<unsigned long long>(v[2]) > req.levels.size())
    return false;
  LeaseReply reply;
  reply.status = QuotaStatus::kRefusedLimit;
  reply.refusal = v[1] == 1 ? LimitRefusal::kOutOfRange : LimitRefusal::kRefillTooLong;
  reply.next_token = kNever;
  reply.binding = static_cast<std::uint32_t>(std::min<long long>(v[2], static_cast<long long>(req.levels.size()) - 1));
  out = reply;
  return true;
}

}  // namespace

bool parseLeaseReply(const redisReply& r, const LeaseRequest& req, LeaseReply& out) noexcept {
  if (r.type != REDIS_REPLY_ARRAY || r.element == nullptr) return false;
  if (r.elements != kFields) return parseRefusal(r, req, out);
  long long v[kFields];
  for (std::size_t i = 0; i < kFields; ++i) {
    const redisReply* e = r.element[i];
    if (e == nullptr || e->type != REDIS_REPLY_INTEGER) return false;
    v[i] = e->integer;
  }
  if (v[0] < 0 || static_cast<unsigned long long>(v[0]) > req.want) return false;
  if (v[3] < 0 || static_cast<unsigned long long>(v[3]) >= req.levels.size()) return false;
  if (v[5] < 0 || v[5] > kMaxMicros || v[7] < 0 || v[7] > UINT32_MAX || (v[8] != 0 && v[8] != 1) || v[9] < 0 ||
      (v[10] != 0 && v[10] != 1) || v[11] < 0 || v[11] > 1'000'000)
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
  reply.judge = v[10] == 1;
  reply.noise = static_cast<double>(v[11]) / 1e6;
  // The answers per second when known (-1 otherwise); the throttles of one recipient always.
  reply.provider_rates.recipient = static_cast<double>(std::max(0LL, v[14])) / 1000.0;
  if (v[12] >= 0 && v[13] >= 0) {
    reply.provider_rates.accepted = static_cast<double>(v[12]) / 1000.0;
    reply.provider_rates.throttled = static_cast<double>(v[13]) / 1000.0;
  }
  out = reply;
  return true;
}

}  // namespace pacer
