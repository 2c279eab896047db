// W4A16 runtime dispatch: the automatic choice is the best supported kernel, DQ4_ISA selects a
// W4A16 variant by name, a name only another family has (e.g. a W4A8 one) leaves W4A16 on its
// automatic choice, and a name no family has is an error.

#include <gtest/gtest.h>

#include <string>

#include "dq4/kernels/error.h"
#include "dq4/kernels/w4a16.h"
#include "dq4/kernels/w4a8.h"

namespace dq4 {
namespace {

TEST(W4A16Dispatch, ReferenceIsAlwaysCompiledAndSupported) {
  const w4a16::Kernel* reference = w4a16::family().find("reference");
  ASSERT_NE(reference, nullptr);
  EXPECT_TRUE(w4a16::family().supported(*reference));
  EXPECT_EQ(w4a16::family().kernels().front(), reference);
}

TEST(W4A16Dispatch, AutomaticChoiceIsTheBestEligibleKernel) {
  const w4a16::Kernel& chosen = w4a16::family().select("");
  EXPECT_TRUE(w4a16::family().eligible(chosen));
  // For scripts that know which kernel a given CPU must get (scripts/test-arm.sh reads the XML).
  RecordProperty("w4a16_chosen_kernel", std::string(w4a16::family().name(chosen)));
  bool after = false;
  for (const w4a16::Kernel* k : w4a16::family().kernels()) {
    if (after) {
      EXPECT_FALSE(w4a16::family().eligible(*k))
          << "a better kernel is eligible: " << w4a16::family().name(*k);
    }
    if (k == &chosen) after = true;
  }
}

TEST(W4A16Dispatch, OverrideSelectsEachSupportedKernel) {
  std::string supported;
  for (const w4a16::Kernel* k : w4a16::family().kernels()) {
    const std::string name(w4a16::family().name(*k));
    if (w4a16::family().supported(*k)) {
      supported += (supported.empty() ? "" : " ") + name;
      EXPECT_EQ(&w4a16::family().select(name), k);
      EXPECT_EQ(&w4a16::family().select("w4a16:" + name), k);
    } else {
      try {
        w4a16::family().select(name);
        ADD_FAILURE() << "unsupported kernel " << name << " was selected";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("which this CPU lacks"), std::string::npos)
            << e.what();
      }
    }
  }
  RecordProperty("w4a16_supported_kernels", supported);
}

TEST(W4A16Dispatch, OtherFamiliesNamesLeaveTheAutomaticChoice) {
  const w4a16::Kernel& automatic = w4a16::family().select("");
  for (const w4a8::Kernel* k : w4a8::family().kernels()) {
    const std::string name(w4a8::family().name(*k));
    if (w4a16::family().find(name) == nullptr) {
      EXPECT_EQ(&w4a16::family().select(name), &automatic) << name;
    }
  }
  EXPECT_EQ(&w4a16::family().select("w4a8:reference"), &automatic);
  EXPECT_EQ(&w4a16::family().select("w4a8:reference,w4a16:reference"),
            w4a16::family().find("reference"));
}

TEST(W4A16Dispatch, UnknownOverrideIsAnError) {
  try {
    w4a16::family().select("sse9");
    ADD_FAILURE() << "unknown kernel accepted";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("DQ4_ISA='sse9'"), std::string::npos) << message;
    EXPECT_NE(message.find("reference"), std::string::npos) << message;
  }
  EXPECT_THROW(w4a16::family().select("w4a16:avx512_vnni"), Error);
}

}  // namespace
}  // namespace dq4
