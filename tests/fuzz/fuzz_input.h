// Taking typed pieces off a fuzzer's input, for the harnesses in this folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace pacer::fuzz {

class Input {
 public:
  Input(const std::uint8_t* data, std::size_t size) : p_(data), left_(size) {}
  std::uint8_t byte() {
    if (left_ == 0) return 0;
    --left_;
    return *p_++;
  }
  std::uint64_t number(int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v = (v << 8) | byte();
    return v;
  }
  // A string of up to `max` bytes, its length from one byte.
  std::string text(std::size_t max = 255) {
    std::size_t n = byte();
    if (n > max) n = max;
    if (n > left_) n = left_;
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    left_ -= n;
    return s;
  }
  std::string rest() {
    std::string s(reinterpret_cast<const char*>(p_), left_);
    p_ += left_;
    left_ = 0;
    return s;
  }
  bool empty() const { return left_ == 0; }

 private:
  const std::uint8_t* p_;
  std::size_t left_;
};

}  // namespace pacer::fuzz
