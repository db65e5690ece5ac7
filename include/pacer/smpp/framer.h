// Cuts a TCP byte stream into whole SMPP PDUs. Pure: bytes in, PDUs out.
// Not thread-safe: one owner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "pacer/smpp/pdu.h"

namespace pacer::smpp {

class Framer {
 public:
  enum class Next {
    kPdu,       // `pdu` holds one whole PDU (header included), valid until the next call
    kNeedMore,  // wait for more bytes
    kBadLength  // command_length below 16 or above the maximum: the stream cannot be resynchronised
  };

  explicit Framer(std::size_t max_pdu = kMaxPduLength) : max_pdu_(max_pdu) {}

  // Adds bytes as they arrive from the socket.
  void append(const std::uint8_t* data, std::size_t n);
  void append(std::string_view bytes) { append(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()); }

  // A writable region of at least `n` bytes at the end of the buffer, for
  // recv() to fill directly; then commit() the count it wrote.
  std::uint8_t* prepare(std::size_t n);
  void commit(std::size_t n) { size_ += n; }

  // The next whole PDU. After kBadLength every later call says kBadLength
  // until reset().
  Next next(std::string_view& pdu);

  // Buffered bytes not yet handed out as PDUs.
  std::size_t buffered() const { return size_ - start_; }
  void reset();

 private:
  void compact();

  std::size_t max_pdu_;
  std::string buf_;        // bytes [start_, size_) are pending; capacity grows to the largest PDU seen
  std::size_t start_ = 0;  // first byte not yet handed out
  std::size_t size_ = 0;   // bytes in use in buf_
  bool broken_ = false;
};

}  // namespace pacer::smpp
