// Runtime dispatch of the attention family and its place in the DQ4_ISA grammar
// (src/kernels/family.h): `attention:<kernel>` targets it alone.

#include <gtest/gtest.h>

#include <string>

#include "dq4/kernels/attention.h"
#include "dq4/kernels/dense.h"
#include "expect_error.h"

namespace dq4::test {
namespace {

TEST(AttentionDispatch, ReferenceIsAlwaysCompiledAndSupported) {
  const attention::Kernel* reference = attention::find_kernel("reference");
  ASSERT_NE(reference, nullptr);
  EXPECT_TRUE(attention::kernel_supported(*reference));
  EXPECT_EQ(attention::compiled_kernels().front(), reference);
}

TEST(AttentionDispatch, AutomaticChoiceIsTheBestSupportedKernel) {
  const attention::Kernel& chosen = attention::select_kernel("");
  EXPECT_TRUE(attention::kernel_supported(chosen));
  // For scripts that know which kernel a given CPU must get (scripts/test-arm.sh reads the XML).
  RecordProperty("attention_chosen_kernel", std::string(attention::kernel_name(chosen)));
  const auto kernels = attention::compiled_kernels();
  bool after = false;
  for (const attention::Kernel* k : kernels) {
    if (after) {
      EXPECT_FALSE(attention::kernel_supported(*k))
          << "a better kernel is supported: " << attention::kernel_name(*k);
    }
    if (k == &chosen) after = true;
  }
}

TEST(AttentionDispatch, OverrideSelectsEachSupportedKernel) {
  for (const attention::Kernel* k : attention::compiled_kernels()) {
    const std::string name(attention::kernel_name(*k));
    if (attention::kernel_supported(*k)) {
      EXPECT_EQ(&attention::select_kernel(name), k);
      EXPECT_EQ(&attention::select_kernel("attention:" + name), k);
    } else {
      expect_error([&] { attention::select_kernel(name); }, "which this CPU lacks");
    }
  }
}

TEST(AttentionDispatch, FamilyEntriesTargetOnlyTheirFamily) {
  const attention::Kernel& automatic = attention::select_kernel("");
  EXPECT_EQ(&attention::select_kernel("dense:reference"), &automatic);
  EXPECT_EQ(&attention::select_kernel("avx512_vnni,neon_i8mm"), &automatic);
  EXPECT_EQ(&attention::select_kernel("dense:reference,attention:reference"),
            attention::find_kernel("reference"));
  EXPECT_EQ(&dense::select_kernel("attention:reference"), &dense::select_kernel(""));
  expect_error([] { attention::select_kernel("attention:vnni"); },
               {"names no kernel 'vnni' of attention"});
  expect_error([] { attention::select_kernel("attentoin:reference"); },
               {"'attentoin' is not a kernel family"});
}

}  // namespace
}  // namespace dq4::test
