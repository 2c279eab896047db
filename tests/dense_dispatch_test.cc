// Runtime dispatch of the dense family and the DQ4_ISA grammar shared by every family
// (src/kernels/family.h): plain names apply to every family that has them, `family:kernel`
// to one family, and names no family knows are errors.

#include <gtest/gtest.h>

#include <string>

#include "dq4/kernels/dense.h"
#include "dq4/kernels/error.h"
#include "dq4/kernels/w4a8.h"
#include "expect_error.h"

namespace dq4::test {
namespace {

TEST(DenseDispatch, ReferenceIsAlwaysCompiledAndSupported) {
  const dense::Kernel* reference = dense::find_kernel("reference");
  ASSERT_NE(reference, nullptr);
  EXPECT_TRUE(dense::kernel_supported(*reference));
  EXPECT_TRUE(dense::kernel_is_exact(*reference));
  EXPECT_EQ(dense::compiled_kernels().front(), reference);
}

TEST(DenseDispatch, AutomaticChoiceIsTheBestSupportedExactKernel) {
  const dense::Kernel& chosen = dense::select_kernel("");
  EXPECT_TRUE(dense::kernel_supported(chosen));
  EXPECT_TRUE(dense::kernel_is_exact(chosen));
  // For scripts that know which kernel a given CPU must get (scripts/test-arm.sh reads the XML).
  RecordProperty("dense_chosen_kernel", std::string(dense::kernel_name(chosen)));
  bool after = false;
  for (const dense::Kernel* k : dense::compiled_kernels()) {
    if (after && dense::kernel_is_exact(*k)) {
      EXPECT_FALSE(dense::kernel_supported(*k))
          << "a better kernel is supported: " << dense::kernel_name(*k);
    }
    if (k == &chosen) after = true;
  }
}

TEST(DenseDispatch, OverrideSelectsEachSupportedKernel) {
  std::string supported;
  for (const dense::Kernel* k : dense::compiled_kernels()) {
    const std::string name(dense::kernel_name(*k));
    if (dense::kernel_supported(*k)) {
      supported += (supported.empty() ? "" : " ") + name;
      EXPECT_EQ(&dense::select_kernel(name), k);
      EXPECT_EQ(&dense::select_kernel("dense:" + name), k);
    } else {
      expect_error([&] { dense::select_kernel(name); }, "which this CPU lacks");
    }
  }
  RecordProperty("dense_supported_kernels", supported);
}

TEST(DenseDispatch, PlainNamesAnotherFamilyHasKeepTheAutomaticChoice) {
  const dense::Kernel& automatic = dense::select_kernel("");
  // Kernels only W4A8 has, and W4A8-only entries.
  for (const char* isa :
       {"avx512_vnni", "avx_vnni", "neon_i8mm", "neon_dotprod", "w4a8:reference", "w4a16:avx2"})
    EXPECT_EQ(&dense::select_kernel(isa), &automatic) << isa;
  // ... and the other way round: W4A8 ignores dense-only names.
  const w4a8::Kernel& w4a8_automatic = w4a8::select_kernel("");
  for (const char* isa : {"avx512f", "avx512_bf16", "neon_bf16", "dense:reference"})
    EXPECT_EQ(&w4a8::select_kernel(isa), &w4a8_automatic) << isa;
}

TEST(DenseDispatch, EveryCompiledKernelNameIsKnownToEveryFamily) {
  for (const dense::Kernel* k : dense::compiled_kernels()) {
    try {
      w4a8::select_kernel(dense::kernel_name(*k));
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find("names no kernel"), std::string::npos) << e.what();
    }
  }
  for (const w4a8::Kernel* k : w4a8::compiled_kernels()) {
    try {
      dense::select_kernel(w4a8::kernel_name(*k));
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find("names no kernel"), std::string::npos) << e.what();
    }
  }
}

TEST(DenseDispatch, FamilyEntriesWinAndTheFirstPlainNameCounts) {
  const dense::Kernel* reference = dense::find_kernel("reference");
  EXPECT_EQ(&dense::select_kernel("avx512_vnni,reference"), reference);
  const std::string best(dense::kernel_name(dense::select_kernel("")));
  EXPECT_EQ(&dense::select_kernel(best + ",dense:reference"), reference);
  EXPECT_EQ(&dense::select_kernel("dense:" + best + ",reference"), &dense::select_kernel(""));
  EXPECT_EQ(&w4a8::select_kernel("dense:avx512_bf16,reference"), w4a8::find_kernel("reference"));
#if defined(__x86_64__)
  if (dense::kernel_supported(*dense::find_kernel("avx2"))) {
    EXPECT_EQ(&dense::select_kernel("avx2"), dense::find_kernel("avx2"));
    EXPECT_EQ(&dense::select_kernel("dense:avx2,reference"), dense::find_kernel("avx2"));
    EXPECT_EQ(&w4a8::select_kernel("avx2"), w4a8::find_kernel("avx2"));
  }
#endif
}

TEST(DenseDispatch, BadEntriesAreErrors) {
  expect_error([] { dense::select_kernel("sse9"); },
               {"DQ4_ISA='sse9'", "names no kernel of dense", "reference"});
  expect_error([] { dense::select_kernel("avx2,sse9"); }, "DQ4_ISA='avx2,sse9'");
  expect_error([] { dense::select_kernel("dense:avx512_vnni"); },
               {"names no kernel 'avx512_vnni' of dense", "available: reference"});
  expect_error([] { dense::select_kernel("gemm:avx2"); }, "'gemm' is not a kernel family");
  expect_error([] { w4a8::select_kernel("w4a8:avx512f"); }, "names no kernel 'avx512f' of w4a8");
  expect_error([] { dense::select_kernel("avx2,"); }, "names no kernel of dense");
}

}  // namespace
}  // namespace dq4::test
