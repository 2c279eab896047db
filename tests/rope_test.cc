// ops::rope_interleaved against ops::rope: the same rotation of each pair, so rotating a head in
// the interleaved layout equals rotating its pairs gathered into the rotate_half layout, bit for
// bit; and a rotation keeps each pair's length.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "dq4/layers/ops.h"

namespace dq4 {
namespace {

TEST(Rope, InterleavedRotatesTheSamePairsAsRotateHalf) {
  constexpr int64_t kHeads = 3, kHalf = 8;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<float> interleaved(kHeads * 2 * kHalf);
  for (float& v : interleaved) v = normal(rng);
  std::vector<float> inv_freq(kHalf), cos_a(kHalf), sin_a(kHalf);
  for (int64_t i = 0; i < kHalf; ++i)
    inv_freq[static_cast<size_t>(i)] =
        1.0f / std::pow(10000.0f, static_cast<float>(2 * i) / (2 * kHalf));
  ops::rope_angles(37, inv_freq.data(), kHalf, cos_a.data(), sin_a.data());

  // Pair i of each head at (2i, 2i + 1) and at (i, i + half).
  std::vector<float> halves(interleaved.size());
  const auto gather = [&](const std::vector<float>& from, std::vector<float>& to) {
    for (int64_t h = 0; h < kHeads; ++h)
      for (int64_t i = 0; i < kHalf; ++i) {
        to[static_cast<size_t>(h * 2 * kHalf + i)] =
            from[static_cast<size_t>(h * 2 * kHalf + 2 * i)];
        to[static_cast<size_t>(h * 2 * kHalf + kHalf + i)] =
            from[static_cast<size_t>(h * 2 * kHalf + 2 * i + 1)];
      }
  };
  gather(interleaved, halves);
  const std::vector<float> before = interleaved;
  ops::rope_interleaved(interleaved.data(), kHeads, kHalf, cos_a.data(), sin_a.data());
  ops::rope(halves.data(), kHeads, kHalf, cos_a.data(), sin_a.data());
  std::vector<float> rotated(interleaved.size());
  gather(interleaved, rotated);
  EXPECT_EQ(rotated, halves);
  for (size_t p = 0; p < before.size(); p += 2)
    EXPECT_NEAR(std::hypot(interleaved[p], interleaved[p + 1]),
                std::hypot(before[p], before[p + 1]), 1e-5f);
  EXPECT_NE(interleaved, before);
}

}  // namespace
}  // namespace dq4
