// libFuzzer target for the Redis lease script's reply parser: any reply
// tree (integers, strings, arrays, errors, nils, nested) against any request
// is read or refused, never a crash, and what is read never grants more than
// was asked.
#include <hiredis/hiredis.h>

#include <cstdlib>
#include <deque>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "lease_reply.h"

namespace {

// Reply nodes built from the input (hiredis' struct, owned here).
struct Tree {
  std::deque<redisReply> nodes;
  std::deque<std::string> strings;
  std::deque<std::vector<redisReply*>> arrays;

  redisReply* build(pacer::fuzz::Input& in, int depth) {
    redisReply& r = nodes.emplace_back();
    r = redisReply{};
    const int types[] = {REDIS_REPLY_INTEGER, REDIS_REPLY_STRING, REDIS_REPLY_ARRAY,
                         REDIS_REPLY_NIL,     REDIS_REPLY_STATUS, REDIS_REPLY_ERROR};
    r.type = types[in.byte() % 6];
    if (r.type == REDIS_REPLY_ARRAY && depth > 3) r.type = REDIS_REPLY_INTEGER;
    switch (r.type) {
      case REDIS_REPLY_INTEGER: r.integer = static_cast<long long>(in.number(8)); break;
      case REDIS_REPLY_ARRAY: {
        auto& children = arrays.emplace_back();
        const int n = in.byte() % 12;
        for (int i = 0; i < n; ++i) children.push_back(build(in, depth + 1));
        r.elements = children.size();
        r.element = children.empty() ? nullptr : children.data();
        break;
      }
      case REDIS_REPLY_NIL: break;
      default: {
        std::string& s = strings.emplace_back(in.text(32));
        r.str = s.data();
        r.len = s.size();
      }
    }
    return &r;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pacer::fuzz::Input in(data, size);
  pacer::LeaseRequest request;
  request.scope = "sms";
  const int levels = 1 + in.byte() % 3;
  for (int i = 0; i < levels; ++i)
    request.levels.push_back(pacer::QuotaLevel{"k" + std::to_string(i), pacer::RateLimit{100.0 * (i + 1), 5}});
  request.want = in.number(2);
  Tree tree;
  const redisReply* reply = tree.build(in, 0);
  pacer::LeaseReply out;
  if (pacer::parseLeaseReply(*reply, request, out) && out.granted > request.want) std::abort();
  return 0;
}
