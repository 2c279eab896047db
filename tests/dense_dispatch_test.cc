// Runtime dispatch of the dense family and the DQ4_ISA grammar shared by every family
// (dq4/kernels/kernel_family.h): plain names apply to every family that has them, `family:kernel`
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
  const dense::Kernel* reference = dense::family().find("reference");
  ASSERT_NE(reference, nullptr);
  EXPECT_TRUE(dense::family().supported(*reference));
  EXPECT_TRUE(dense::family().exact(*reference));
  EXPECT_EQ(dense::family().kernels().front(), reference);
}

TEST(DenseDispatch, AutomaticChoiceIsTheBestEligibleKernel) {
  const dense::Kernel& chosen = dense::family().select("");
  EXPECT_TRUE(dense::family().eligible(chosen));
  EXPECT_TRUE(dense::family().exact(chosen));
  // For scripts that know which kernel a given CPU must get (scripts/test-arm.sh reads the XML).
  RecordProperty("dense_chosen_kernel", std::string(dense::family().name(chosen)));
  bool after = false;
  for (const dense::Kernel* k : dense::family().kernels()) {
    if (after) {
      EXPECT_FALSE(dense::family().eligible(*k))
          << "a better kernel is eligible: " << dense::family().name(*k);
    }
    if (k == &chosen) after = true;
  }
}

TEST(DenseDispatch, OverrideSelectsEachSupportedKernel) {
  std::string supported;
  for (const dense::Kernel* k : dense::family().kernels()) {
    const std::string name(dense::family().name(*k));
    if (dense::family().supported(*k)) {
      supported += (supported.empty() ? "" : " ") + name;
      EXPECT_EQ(&dense::family().select(name), k);
      EXPECT_EQ(&dense::family().select("dense:" + name), k);
    } else {
      expect_error([&] { dense::family().select(name); }, "which this CPU lacks");
    }
  }
  RecordProperty("dense_supported_kernels", supported);
}

TEST(DenseDispatch, PlainNamesAnotherFamilyHasKeepTheAutomaticChoice) {
  const dense::Kernel& automatic = dense::family().select("");
  // Kernels only W4A8 has, and W4A8-only entries.
  for (const char* isa :
       {"avx512_vnni", "avx_vnni", "neon_i8mm", "neon_dotprod", "w4a8:reference", "w4a16:avx2"})
    EXPECT_EQ(&dense::family().select(isa), &automatic) << isa;
  // ... and the other way round: W4A8 ignores dense-only names.
  const w4a8::Kernel& w4a8_automatic = w4a8::family().select("");
  for (const char* isa : {"avx512f", "avx512_bf16", "neon_bf16", "dense:reference"})
    EXPECT_EQ(&w4a8::family().select(isa), &w4a8_automatic) << isa;
}

TEST(DenseDispatch, EveryCompiledKernelNameIsKnownToEveryFamily) {
  for (const dense::Kernel* k : dense::family().kernels()) {
    try {
      w4a8::family().select(dense::family().name(*k));
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find("names no kernel"), std::string::npos) << e.what();
    }
  }
  for (const w4a8::Kernel* k : w4a8::family().kernels()) {
    try {
      dense::family().select(w4a8::family().name(*k));
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find("names no kernel"), std::string::npos) << e.what();
    }
  }
}

TEST(DenseDispatch, FamilyEntriesWinAndTheFirstPlainNameCounts) {
  const dense::Kernel* reference = dense::family().find("reference");
  EXPECT_EQ(&dense::family().select("avx512_vnni,reference"), reference);
  const std::string best(dense::family().name(dense::family().select("")));
  EXPECT_EQ(&dense::family().select(best + ",dense:reference"), reference);
  EXPECT_EQ(&dense::family().select("dense:" + best + ",reference"), &dense::family().select(""));
  EXPECT_EQ(&w4a8::family().select("dense:avx512_bf16,reference"),
            w4a8::family().find("reference"));
#if defined(__x86_64__)
  if (dense::family().supported(*dense::family().find("avx2"))) {
    EXPECT_EQ(&dense::family().select("avx2"), dense::family().find("avx2"));
    EXPECT_EQ(&dense::family().select("dense:avx2,reference"), dense::family().find("avx2"));
    EXPECT_EQ(&w4a8::family().select("avx2"), w4a8::family().find("avx2"));
  }
#endif
}

TEST(DenseDispatch, BadEntriesAreErrors) {
  expect_error([] { dense::family().select("sse9"); },
               {"DQ4_ISA='sse9'", "names no kernel of dense", "reference"});
  expect_error([] { dense::family().select("avx2,sse9"); }, "DQ4_ISA='avx2,sse9'");
  expect_error([] { dense::family().select("dense:avx512_vnni"); },
               {"names no kernel 'avx512_vnni' of dense", "available: reference"});
  expect_error([] { dense::family().select("gemm:avx2"); }, "'gemm' is not a kernel family");
  expect_error([] { w4a8::family().select("w4a8:avx512f"); }, "names no kernel 'avx512f' of w4a8");
  expect_error([] { dense::family().select("avx2,"); }, "names no kernel of dense");
}

}  // namespace
}  // namespace dq4::test
