// Runtime dispatch: the automatic choice is the best supported kernel, DQ4_ISA-style overrides
// select exactly the named kernel, and naming a kernel the CPU or the build lacks is an error.

#include <gtest/gtest.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <set>
#include <sstream>
#include <string>

#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

#include "../src/kernels/family.h"
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

TEST(CpuDispatch, AutomaticChoiceIsTheBestEligibleKernel) {
  const w4a8::Kernel& chosen = w4a8::family().select("");
  EXPECT_TRUE(w4a8::family().eligible(chosen));
  // For scripts that know which kernel a given CPU must get (scripts/test-arm.sh reads the XML).
  RecordProperty("chosen_kernel", std::string(w4a8::family().name(chosen)));
  const auto kernels = w4a8::family().kernels();
  bool after = false;
  for (const w4a8::Kernel* k : kernels) {
    if (after) {
      EXPECT_FALSE(w4a8::family().eligible(*k))
          << "a better kernel is eligible: " << w4a8::family().name(*k);
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
    for (const w4a8::Kernel* k : w4a8::family().kernels())
      EXPECT_NE(message.find(std::string(w4a8::family().name(*k))), std::string::npos)
          << w4a8::family().name(*k) << " is not named: " << message;
  }
}

// The probe against what the system reports by other means: the compiler runtime's own CPUID
// reading on x86 (which, like the probe, counts a feature only where the OS saves its
// registers), the kernel's hwcaps on Arm; and no flag of the other architecture.
TEST(CpuDispatch, FeaturesMatchTheArchitecture) {
  const CpuFeatures& f = cpu_features();
#if defined(__x86_64__)
  __builtin_cpu_init();
  EXPECT_EQ(f.avx2, bool(__builtin_cpu_supports("avx2")));
  EXPECT_EQ(f.fma, bool(__builtin_cpu_supports("fma")));
  EXPECT_EQ(f.avx512f, bool(__builtin_cpu_supports("avx512f")));
  EXPECT_EQ(f.avx512bw, bool(__builtin_cpu_supports("avx512bw")));
  EXPECT_EQ(f.avx512vl, bool(__builtin_cpu_supports("avx512vl")));
  EXPECT_EQ(f.avx512_vnni, bool(__builtin_cpu_supports("avx512vnni")));
  EXPECT_EQ(f.avx_vnni, bool(__builtin_cpu_supports("avxvnni")));
  EXPECT_EQ(f.avx512_bf16, bool(__builtin_cpu_supports("avx512bf16")));
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  ASSERT_TRUE(__get_cpuid(0, &eax, &ebx, &ecx, &edx));
  const bool amd = std::string(reinterpret_cast<const char*>(&ebx), 4) +
                       std::string(reinterpret_cast<const char*>(&edx), 4) +
                       std::string(reinterpret_cast<const char*>(&ecx), 4) ==
                   "AuthenticAMD";
  ASSERT_TRUE(__get_cpuid(1, &eax, &ebx, &ecx, &edx));
  const unsigned family = ((eax >> 8) & 0xf) + ((eax >> 20) & 0xff);
  EXPECT_EQ(f.avx512_halves, amd && family == 0x19 && f.avx512f);
  EXPECT_FALSE(f.neon || f.neon_dotprod || f.neon_i8mm || f.neon_bf16) << f.to_string();
#elif defined(__aarch64__)
  const unsigned long hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2);
  EXPECT_EQ(f.neon, (hwcap & HWCAP_ASIMD) != 0);
  EXPECT_EQ(f.neon_dotprod, (hwcap & HWCAP_ASIMDDP) != 0);
  EXPECT_EQ(f.neon_i8mm, (hwcap2 & HWCAP2_I8MM) != 0);
  EXPECT_EQ(f.neon_bf16, (hwcap2 & HWCAP2_BF16) != 0);
  EXPECT_TRUE(f.neon);  // every AArch64 CPU has Advanced SIMD
  EXPECT_FALSE(f.avx2 || f.fma || f.avx512f || f.avx512bw || f.avx512vl || f.avx512_vnni ||
               f.avx_vnni || f.avx512_bf16 || f.avx512_halves)
      << f.to_string();
#endif
  // to_string() names exactly the flags that are set.
  const std::pair<bool, const char*> flags[] = {{f.avx2, "avx2"},
                                                {f.fma, "fma"},
                                                {f.avx512f, "avx512f"},
                                                {f.avx512bw, "avx512bw"},
                                                {f.avx512vl, "avx512vl"},
                                                {f.avx512_vnni, "avx512_vnni"},
                                                {f.avx_vnni, "avx_vnni"},
                                                {f.avx512_bf16, "avx512_bf16"},
                                                {f.avx512_halves, "avx512_halves"},
                                                {f.amx_tile, "amx_tile"},
                                                {f.amx_int8, "amx_int8"},
                                                {f.amx_bf16, "amx_bf16"},
                                                {f.neon, "neon"},
                                                {f.neon_dotprod, "dotprod"},
                                                {f.neon_i8mm, "i8mm"},
                                                {f.neon_bf16, "bf16"}};
  std::set<std::string> expected;
  for (const auto& [on, name] : flags)
    if (on) expected.insert(name);
  if (expected.empty()) expected.insert("none");
  std::istringstream words(f.to_string());
  std::set<std::string> named;
  for (std::string w; words >> w;) named.insert(w);
  EXPECT_EQ(named, expected) << f.to_string();
}

// A kernel marked `automatic = false` (the AMX tile model) is chosen only by name, even where it
// is the last (best) supported kernel of its family.
struct FakeKernel {
  const char* name;
  const char* variant;
  const char* needs;
  bool (*supported)(const CpuFeatures&);
  bool automatic = true;
  bool (*preferred)(const CpuFeatures&) = nullptr;
};
bool always(const CpuFeatures&) { return true; }

TEST(CpuDispatch, KernelsNotAutomaticAreChosenOnlyByName) {
  const FakeKernel plain{"reference", "plain", "nothing", always};
  const FakeKernel model{"amx_model", "model", "nothing", always, false};
  const KernelFamily<FakeKernel> family("w4a8", {&plain, &model});
  EXPECT_EQ(&family.select(""), &plain);
  EXPECT_EQ(&family.select("amx_model"), &model);
  EXPECT_TRUE(family.eligible(plain));
  EXPECT_FALSE(family.eligible(model));
}

// A kernel with `preferred` set is chosen automatically only where it returns true, and by name
// wherever it is supported.
bool never(const CpuFeatures&) { return false; }

TEST(CpuDispatch, KernelsTunedForOtherCoresAreChosenOnlyByName) {
  const FakeKernel plain{"reference", "plain", "nothing", always};
  const FakeKernel other_core{"avx512_vnni", "other", "nothing", always, true, never};
  const FakeKernel this_core{"avx512_vnni_zen4", "this", "nothing", always, true, always};
  EXPECT_EQ(&KernelFamily<FakeKernel>("w4a8", {&plain, &other_core}).select(""), &plain);
  EXPECT_EQ(&KernelFamily<FakeKernel>("w4a8", {&plain, &other_core}).select("avx512_vnni"),
            &other_core);
  EXPECT_EQ(&KernelFamily<FakeKernel>("w4a8", {&plain, &this_core}).select(""), &this_core);
  const KernelFamily<FakeKernel> both("w4a8", {&plain, &other_core, &this_core});
  EXPECT_FALSE(both.eligible(other_core));
  EXPECT_TRUE(both.eligible(this_core));
}

#if defined(__x86_64__)
// The automatic W4A8 choice on this CPU: of the two AVX512-VNNI variants, the one tuned for cores
// that run 512-bit operations in halves exactly on such cores.
TEST(CpuDispatch, W4a8ChoiceFollowsTheCore) {
  const CpuFeatures& f = cpu_features();
  const char* expected = f.amx_int8 && f.avx512_vnni ? "amx"
                         : f.avx512_vnni ? (f.avx512_halves ? "avx512_vnni_zen4" : "avx512_vnni")
                         : f.avx_vnni && f.fma ? "avx_vnni"
                         : f.avx2 && f.fma     ? "avx2"
                                               : "reference";
  EXPECT_EQ(w4a8::family().name(w4a8::family().select("")), expected) << f.to_string();
}

// AMX counts only with the OS's permission (requested by the probe); otherwise the status says
// why, and the amx kernel is refused by name and never chosen.
TEST(CpuDispatch, AmxIsUsableOnlyWithPermissionAndSaysWhyNot) {
  const CpuFeatures& f = cpu_features();
  const w4a8::Kernel* amx = w4a8::family().find("amx");
  ASSERT_NE(amx, nullptr);
  EXPECT_EQ(f.amx_int8, f.amx_status == "usable") << f.amx_status;
  EXPECT_FALSE(f.amx_status.empty());
  EXPECT_EQ(w4a8::family().supported(*amx), f.amx_int8 && f.avx512_vnni);
  if (!f.amx_int8) {
    EXPECT_NE(&w4a8::family().select(""), amx);
    try {
      w4a8::family().select("amx");
      ADD_FAILURE() << "amx selected without AMX: " << f.amx_status;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("amx_int8"), std::string::npos) << e.what();
    }
  }
}

// The tile model runs anywhere but only when named: it must never be the automatic choice.
TEST(CpuDispatch, AmxModelIsChosenOnlyByName) {
  const w4a8::Kernel* model = w4a8::family().find("amx_model");
  ASSERT_NE(model, nullptr);
  EXPECT_TRUE(w4a8::family().supported(*model));
  EXPECT_NE(&w4a8::family().select(""), model);
  EXPECT_EQ(&w4a8::family().select("amx_model"), model);
  EXPECT_EQ(&w4a8::family().select("w4a8:amx_model"), model);
}
#endif

}  // namespace
}  // namespace dq4
