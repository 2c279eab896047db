// Runtime dispatch: the automatic choice is the best supported kernel, DQ4_ISA-style overrides
// select exactly the named kernel, and naming a kernel the CPU or the build lacks is an error.

#include <gtest/gtest.h>

#include <string>

#include "dq4/kernels/cpu_features.h"
#include "dq4/kernels/error.h"
#include "dq4/kernels/w4a8.h"

namespace dq4 {
namespace {

TEST(CpuDispatch, ReferenceIsAlwaysCompiledAndSupported) {
  const w4a8::Kernel* reference = w4a8::family().find("reference");
  ASSERT_NE(reference, nullptr);
  EXPECT_TRUE(w4a8::family().supported(*reference));
  EXPECT_EQ(w4a8::family().kernels().front(), reference);
}

TEST(CpuDispatch, AutomaticChoiceIsTheBestSupportedKernel) {
  const w4a8::Kernel& chosen = w4a8::family().select("");
  EXPECT_TRUE(w4a8::family().supported(chosen));
  // For scripts that know which kernel a given CPU must get (scripts/test-arm.sh reads the XML).
  RecordProperty("chosen_kernel", std::string(w4a8::family().name(chosen)));
  const auto kernels = w4a8::family().kernels();
  bool after = false;
  for (const w4a8::Kernel* k : kernels) {
    if (after) {
      EXPECT_FALSE(w4a8::family().supported(*k))
          << "a better kernel is supported: " << w4a8::family().name(*k);
    }
    if (k == &chosen) after = true;
  }
}

TEST(CpuDispatch, OverrideSelectsEachSupportedKernel) {
  std::string supported;
  for (const w4a8::Kernel* k : w4a8::family().kernels()) {
    const std::string name(w4a8::family().name(*k));
    if (w4a8::family().supported(*k)) {
      supported += (supported.empty() ? "" : " ") + name;
      EXPECT_EQ(&w4a8::family().select(name), k);
    } else {
      try {
        w4a8::family().select(name);
        ADD_FAILURE() << "unsupported kernel " << name << " was selected";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("which this CPU lacks"), std::string::npos)
            << e.what();
      }
    }
  }
  RecordProperty("supported_kernels", supported);
}

TEST(CpuDispatch, UnknownOverrideNamesTheAvailableKernels) {
  try {
    w4a8::family().select("sse9");
    ADD_FAILURE() << "unknown kernel accepted";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("DQ4_ISA='sse9'"), std::string::npos) << message;
    EXPECT_NE(message.find("reference"), std::string::npos) << message;
  }
}

TEST(CpuDispatch, FeaturesMatchTheArchitecture) {
  const CpuFeatures& f = cpu_features();
#if defined(__aarch64__)
  EXPECT_TRUE(f.neon);
  EXPECT_FALSE(f.avx2);
#elif defined(__x86_64__)
  EXPECT_FALSE(f.neon);
  if (f.avx512_vnni) {
    EXPECT_TRUE(f.avx512f);
  }
#endif
  EXPECT_FALSE(f.to_string().empty());
}

}  // namespace
}  // namespace dq4
