#pragma once
// What the CPU we run on can do, probed once (CPUID + XGETBV on x86, getauxval on Arm).

#include <string>

namespace dq4 {

struct CpuFeatures {
  // x86 (each flag is only set when the OS also saves the register state it needs)
  bool avx2 = false;
  bool fma = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512_vnni = false;
  bool avx_vnni = false;
  bool avx512_bf16 = false;
  // AVX-512 whose 512-bit operations run as two 256-bit halves (AMD Zen 4): a tuning hint, not a
  // feature; kernels built for such cores run anywhere AVX-512 does.
  bool avx512_halves = false;
  // AMX: set only where the OS saves the tile state and granted this process its use
  // (arch_prctl on Linux, requested by the probe); `amx_status` says why not otherwise.
  bool amx_tile = false;
  bool amx_int8 = false;
  bool amx_bf16 = false;
  std::string amx_status;  // "usable", or why AMX is off ("no AMX-INT8 on this CPU", ...)
  // Arm
  bool neon = false;
  bool neon_dotprod = false;
  bool neon_i8mm = false;
  bool neon_bf16 = false;

  // Space-separated list of the flags that are set, e.g. "avx2 fma avx512f ...".
  std::string to_string() const;
};

// The features of this machine, probed on first call.
const CpuFeatures& cpu_features();

}  // namespace dq4
