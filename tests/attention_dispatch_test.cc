// Runtime dispatch of the attention family and its place in the DQ4_ISA grammar
// (dq4/kernels/kernel_family.h): `attention:<kernel>` targets it alone.

#include <gtest/gtest.h>

#include <string>

#include "dq4/kernels/attention.h"
#include "dq4/kernels/cpu_features.h"
#include "dq4/kernels/dense.h"
#include "expect_error.h"

namespace dq4::test {
namespace {

TEST(AttentionDispatch, ReferenceIsAlwaysCompiledAndSupported) {
  const attention::Kernel* reference = attention::family().find("reference");
  ASSERT_NE(reference, nullptr);
  EXPECT_TRUE(attention::family().supported(*reference));
  EXPECT_EQ(attention::family().kernels().front(), reference);
}

TEST(AttentionDispatch, AutomaticChoiceIsTheBestEligibleKernel) {
  const attention::Kernel& chosen = attention::family().select("");
  EXPECT_TRUE(attention::family().eligible(chosen));
  // For scripts that know which kernel a given CPU must get (scripts/test-arm.sh reads the XML).
  RecordProperty("attention_chosen_kernel", std::string(attention::family().name(chosen)));
  const auto kernels = attention::family().kernels();
  bool after = false;
  for (const attention::Kernel* k : kernels) {
    if (after) {
      EXPECT_FALSE(attention::family().eligible(*k))
          << "a better kernel is eligible: " << attention::family().name(*k);
    }
    if (k == &chosen) after = true;
  }
}

#if defined(__x86_64__)
// On cores that run 512-bit operations in halves (Zen 4) the AVX-512F tiles that prefetch into L2;
// elsewhere the ones that prefetch into L1.
TEST(AttentionDispatch, ChoiceFollowsTheCore) {
  const CpuFeatures& f = cpu_features();
  const char* expected = f.avx512f && f.avx2 && f.fma
                             ? (f.avx512_halves ? "avx512f_zen4" : "avx512f")
                         : f.avx2 && f.fma ? "avx2"
                                           : "reference";
  EXPECT_EQ(attention::family().name(attention::family().select("")), expected) << f.to_string();
}
#endif

TEST(AttentionDispatch, OverrideSelectsEachSupportedKernel) {
  for (const attention::Kernel* k : attention::family().kernels()) {
    const std::string name(attention::family().name(*k));
    if (attention::family().supported(*k)) {
      EXPECT_EQ(&attention::family().select(name), k);
      EXPECT_EQ(&attention::family().select("attention:" + name), k);
    } else {
      expect_error([&] { attention::family().select(name); }, "which this CPU lacks");
    }
  }
}

TEST(AttentionDispatch, FamilyEntriesTargetOnlyTheirFamily) {
  const attention::Kernel& automatic = attention::family().select("");
  EXPECT_EQ(&attention::family().select("dense:reference"), &automatic);
  EXPECT_EQ(&attention::family().select("avx512_vnni,neon_i8mm"), &automatic);
  EXPECT_EQ(&attention::family().select("dense:reference,attention:reference"),
            attention::family().find("reference"));
  EXPECT_EQ(&dense::family().select("attention:reference"), &dense::family().select(""));
  expect_error([] { attention::family().select("attention:vnni"); },
               {"names no kernel 'vnni' of attention"});
  expect_error([] { attention::family().select("attentoin:reference"); },
               {"'attentoin' is not a kernel family"});
}

}  // namespace
}  // namespace dq4::test
