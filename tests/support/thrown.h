// What a call throws, for tests of error messages.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace pacer::test_support {

// The what() of the E that `fn` throws, after `check(e)` has looked at it.
// When `fn` throws nothing: a test failure, and "(nothing thrown)" so that
// the caller's own expectation on the text fails too. An exception of any
// other type passes through to gtest, which reports it.
template <typename E, typename Fn, typename Check>
std::string thrownBy(Fn&& fn, Check&& check) {
  try {
    std::forward<Fn>(fn)();
  } catch (const E& e) {
    std::forward<Check>(check)(e);
    return e.what();
  }
  ADD_FAILURE() << "nothing thrown";
  return "(nothing thrown)";
}

template <typename E, typename Fn>
std::string thrownBy(Fn&& fn) {
  return thrownBy<E>(std::forward<Fn>(fn), [](const E&) {});
}

}  // namespace pacer::test_support
