#pragma once
// The one exception type dq4 throws for bad input or an unusable configuration.
// Messages name the function, the field and the offending value.

#include <stdexcept>
#include <string>

namespace dq4 {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace dq4
