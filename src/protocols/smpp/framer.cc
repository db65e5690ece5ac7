#include "pacer/smpp/framer.h"

#include <cstring>

namespace pacer::smpp {

void Framer::compact() {
  // Slide pending bytes to the front only when that frees real room, so a
  // steady stream of small PDUs costs no copies per PDU.
  if (start_ == 0) return;
  const std::size_t pending = size_ - start_;
  if (pending > 0) std::memmove(buf_.data(), buf_.data() + start_, pending);
  start_ = 0;
  size_ = pending;
}

std::uint8_t* Framer::prepare(std::size_t n) {
  if (buf_.size() - size_ < n) {
    compact();
    if (buf_.size() - size_ < n) buf_.resize(size_ + n);
  }
  return reinterpret_cast<std::uint8_t*>(buf_.data() + size_);
}

void Framer::append(const std::uint8_t* data, std::size_t n) {
  if (n == 0) return;
  std::memcpy(prepare(n), data, n);
  commit(n);
}

Framer::Next Framer::next(std::string_view& pdu) {
  if (broken_) return Next::kBadLength;
  const std::size_t pending = size_ - start_;
  if (pending < 4) {
    if (pending == 0) start_ = size_ = 0;  // empty: start over at the front for free
    return Next::kNeedMore;
  }
  const auto* p = reinterpret_cast<const std::uint8_t*>(buf_.data() + start_);
  const std::uint32_t length =
      (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
  if (length < kHeaderLength || length > max_pdu_) {
    broken_ = true;
    return Next::kBadLength;
  }
  if (pending < length) return Next::kNeedMore;
  pdu = std::string_view(buf_.data() + start_, length);
  start_ += length;
  return Next::kPdu;
}

void Framer::reset() {
  start_ = size_ = 0;
  broken_ = false;
}

}  // namespace pacer::smpp
