#pragma once
// A small int4 weight matrix (n x k, every value 1, every scale 0.5) as the source both int4
// families pack (int4::WeightSource); tests change fields to make it bad.

#include <cstdint>
#include <vector>

#include "dq4/kernels/int4.h"

namespace dq4::test {

struct SmallInt4Weights {
  int64_t n = 4, k = 64;
  std::vector<int8_t> values = std::vector<int8_t>(256, 1);
  std::vector<float> scales = std::vector<float>(8, 0.5f);

  int4::WeightSource source() const {
    int4::WeightSource s;
    s.n = n;
    s.k = k;
    s.values = values.data();
    s.scales = scales.data();
    return s;
  }
};

}  // namespace dq4::test
