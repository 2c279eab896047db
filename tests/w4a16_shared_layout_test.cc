// One packed copy serves both families: w4a16::pack() of channelwise weights or bf16 group scales
// is byte-identical to w4a8::pack() for the W4A8 kernel with the same panel width, and
// w4a16::matmul() on a w4a8::PackedWeights gives the W4A16 reference's result (on the scales the
// W4A8 pack holds) while w4a8::matmul() on the same copy still gives W4A8's.

#include <gtest/gtest.h>

#include <cstring>
#include <utility>

#include "bit_exact.h"
#include "matmul_case_args.h"
#include "w4a16_test_support.h"

namespace dq4::test {
namespace {

// (W4A8 kernel, W4A16 kernel) pairs of this build that pack the same panel width.
std::vector<std::pair<const w4a8::Kernel*, const w4a16::Kernel*>> same_width_pairs() {
  const std::pair<const char*, const char*> names[] = {
      {"reference", "reference"}, {"avx2", "avx2"}, {"avx512_vnni", "avx512f"}, {"neon", "neon"}};
  std::vector<std::pair<const w4a8::Kernel*, const w4a16::Kernel*>> out;
  for (const auto& [a8, a16] : names) {
    const w4a8::Kernel* k8 = w4a8::family().find(a8);
    const w4a16::Kernel* k16 = w4a16::family().find(a16);
    if (k8 != nullptr && k16 != nullptr && w4a8::family().supported(*k8) &&
        w4a16::family().supported(*k16))
      out.emplace_back(k8, k16);
  }
  return out;
}

// The case's source with every group scale replaced by its bf16 rounding (what W4A8 packs hold;
// channelwise scales stay f32 there).
struct Bf16Scales {
  std::vector<uint16_t> scales;
  int4::WeightSource source;
  Bf16Scales(const W4A8Case& c, const W4A8Data& d) : source(d.source(c)) {
    if (c.group == 0 || c.group == c.k) return;
    const int64_t groups = (c.k + c.group - 1) / c.group;
    for (int64_t n = 0; n < c.n; ++n)
      for (int64_t g = 0; g < groups; ++g) {
        const float rounded = d.effective_scale(c, n, g);
        uint32_t bits;
        std::memcpy(&bits, &rounded, 4);
        scales.push_back(static_cast<uint16_t>(bits >> 16));
      }
    source.scales = scales.data();
    source.scale_type = int4::ScaleType::bf16;
  }
};

TEST(W4A16SharedLayout, PacksAreByteIdenticalToW4A8) {
  ThreadPool pool(2);
  int compared = 0;
  for (const W4A8Case& c : w4a8_cases()) {
    if (c.m != 1 || c.huge_scales) continue;
    const W4A8Data d = make_data(c);
    const bool shareable = c.group == 0 || c.group == c.k || c.scale_type == int4::ScaleType::bf16;
    for (const auto& [k8, k16] : same_width_pairs()) {
      const auto p8 = w4a8::pack(d.source(c), *k8, &pool);
      const auto p16 = w4a16::pack(d.source(c), *k16, &pool);
      EXPECT_EQ(p16.f32_group_scales(), !shareable) << c.name();
      if (!shareable) continue;
      ASSERT_EQ(p8.bytes(), p16.bytes()) << c.name();
      EXPECT_EQ(std::memcmp(p8.data(), p16.data(), p8.bytes()), 0)
          << c.name() << " " << w4a16::family().name(*k16);
      ++compared;
    }
  }
  EXPECT_GT(compared, 5);
}

TEST(W4A16SharedLayout, OneW4A8PackRunsBothFamilies) {
  ThreadPool pool(3);
  const w4a16::Kernel& reference16 = *w4a16::family().find("reference");
  const w4a8::Kernel& reference8 = *w4a8::family().find("reference");
  int checked = 0;
  for (const W4A8Case& c : w4a8_cases()) {
    if (c.m > 5 && c.m != 17) continue;
    const W4A8Data d = make_data(c);
    const Bf16Scales rounded(c, d);
    // The W4A16 reference on the scales a W4A8 pack holds; W4A8 itself by its reference.
    const auto want16 = run_w4a16_on(w4a16::pack(rounded.source, reference16, &pool), c, d, pool);
    const auto want8 = run_w4a8(c, d, reference8, pool);
    for (const w4a8::Kernel* k8 : runnable_kernels()) {
      const w4a8::PackedWeights shared = w4a8::pack(d.source(c), *k8, &pool);
      const auto y16 = run_w4a16_on(shared, c, d, pool);
      size_t at = first_bit_difference(want16, y16);
      ASSERT_EQ(at, want16.size()) << c.name() << " packed by w4a8 " << w4a8::family().name(*k8)
                                   << ": W4A16 differs at " << at;
      std::vector<float> y8 = case_output(c, d, nullptr);
      w4a8::matmul(shared, case_args(c, d, y8, false, pool));
      at = first_bit_difference(want8, y8);
      ASSERT_EQ(at, want8.size()) << c.name() << " packed by w4a8 " << w4a8::family().name(*k8)
                                  << ": W4A8 differs at " << at;
      ++checked;
    }
  }
  EXPECT_GT(checked, 50);
}

}  // namespace
}  // namespace dq4::test
