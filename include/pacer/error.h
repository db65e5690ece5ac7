// The root of every exception Pacer throws: what went wrong, and whether
// waiting and trying again can help. Callers decide on the kind (retry,
// back off, dead-letter, exit with a message), not on the concrete class.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace pacer {

enum class ErrorKind : std::uint8_t {
  kInvalid,      // bad input or settings: permanent until someone fixes them
  kUnavailable,  // a service did not answer (refused, lost, timed out): try again later
  kRejected,     // a service answered and refused the request itself: permanent
};

// "invalid", "unavailable", "rejected".
const char* errorKindName(ErrorKind kind) noexcept;

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }
  // Whether the same call may succeed later without a change (kUnavailable).
  bool retryable() const noexcept { return kind_ == ErrorKind::kUnavailable; }

 private:
  ErrorKind kind_;
};

// Bad input or settings (the common case of kInvalid).
class InvalidError : public Error {
 public:
  explicit InvalidError(const std::string& what) : Error(ErrorKind::kInvalid, what) {}
};

}  // namespace pacer
