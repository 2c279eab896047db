#pragma once
// What one part of a Linear holds (shared by linear.cc and experts.cc, which runs the parts of
// several Linears in one job).

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "dq4/kernels/dense.h"
#include "dq4/kernels/w4a16.h"
#include "dq4/kernels/w4a8.h"
#include "dq4/layers/linear.h"

namespace dq4 {

struct Linear::Part {
  LinearRun run = LinearRun::w4a8;
  int64_t group_size = 0;
  int64_t first_column = 0, columns = 0;
  std::vector<std::string> modules;
  std::variant<w4a8::PackedWeights, w4a16::PackedWeights, dense::PackedWeights> weights;
};

}  // namespace dq4
