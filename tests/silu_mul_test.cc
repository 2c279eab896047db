// ops::silu_mul against silu computed in double, over the whole range of f32 gates.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "dq4/layers/ops.h"

namespace dq4 {
namespace {

double silu(double g) { return g / (1.0 + std::exp(-g)); }

TEST(SiluMul, WithinAFewUlpOfDoubleOverEveryRange) {
  std::vector<float> gates;
  std::mt19937 rng(7);
  for (float scale : {1e-30f, 1e-3f, 0.5f, 4.0f, 30.0f, 90.0f, 1e4f, 1e38f}) {
    std::uniform_real_distribution<float> d(-scale, scale);
    for (int i = 0; i < 2000; ++i) gates.push_back(d(rng));
  }
  for (float g : {0.0f, -0.0f, 87.0f, -87.0f, 88.0f, -88.0f, 0.34657359f, -0.34657359f})
    gates.push_back(g);
  const int64_t cols = static_cast<int64_t>(gates.size());
  std::vector<float> gate_up(gates);
  gate_up.insert(gate_up.end(), gates.size(), 0.75f);  // up
  std::vector<float> out(gates.size());
  ops::silu_mul(gate_up.data(), 1, cols, 2 * cols, out.data(), cols);
  for (int64_t i = 0; i < cols; ++i) {
    const double g = gates[i], want = silu(g) * 0.75;
    // Below -88 silu is -|g| / exp(-g), below 1e-36 for any f32 g: 0 is within that.
    if (g < -88.0) {
      EXPECT_LE(std::fabs(out[i]), 1e-36) << g;
      continue;
    }
    EXPECT_NEAR(out[i], want, 4 * std::numeric_limits<float>::epsilon() * std::fabs(want) + 1e-44)
        << "gate " << g;
  }
}

TEST(SiluMul, NonFiniteGatesStayNonFinite) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float gate_up[6] = {nan, inf, -inf, 1.0f, 1.0f, 1.0f};
  float out[3];
  ops::silu_mul(gate_up, 1, 3, 6, out, 3);
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(out[1], inf);
  EXPECT_TRUE(std::isnan(out[2]) || out[2] == 0.0f);  // -inf / (1 + exp(88)): -inf or NaN
}

TEST(SiluMul, RowsHonourTheirStrides) {
  // Two rows of 3 columns in rows of 8 (gate, up, 2 unused), output rows of 5.
  std::vector<float> gate_up(16, 99.0f);
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 3; ++i) {
      gate_up[r * 8 + i] = 0.5f * (i + 1) - r;
      gate_up[r * 8 + 3 + i] = 2.0f + r;
    }
  std::vector<float> out(10, -1.0f);
  ops::silu_mul(gate_up.data(), 2, 3, 8, out.data(), 5);
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 3; ++i)
      EXPECT_NEAR(out[r * 5 + i], silu(0.5 * (i + 1) - r) * (2.0 + r), 1e-6) << r << " " << i;
    EXPECT_EQ(out[r * 5 + 3], -1.0f);
    EXPECT_EQ(out[r * 5 + 4], -1.0f);
  }
}

}  // namespace
}  // namespace dq4
