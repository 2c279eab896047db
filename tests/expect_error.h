#pragma once
// Asserts that f() throws dq4::Error and that its message mentions every fragment.

#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <string>

#include "dq4/kernels/error.h"

namespace dq4::test {

inline void expect_error(const std::function<void()>& f,
                         std::initializer_list<std::string> fragments) {
  try {
    f();
    ADD_FAILURE() << "expected an error mentioning '" << *fragments.begin() << "'";
  } catch (const Error& e) {
    for (const auto& fragment : fragments)
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
          << "message '" << e.what() << "' does not mention '" << fragment << "'";
  }
}

inline void expect_error(const std::function<void()>& f, const std::string& fragment) {
  expect_error(f, {fragment});
}

}  // namespace dq4::test
