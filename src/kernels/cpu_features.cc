#include "dq4/kernels/cpu_features.h"

#include "amx/os_permission.h"

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif

namespace dq4 {
namespace {

#if defined(__x86_64__)
uint64_t read_xcr0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (uint64_t{edx} << 32) | eax;
}

// XCR0 bits 17 and 18: the OS saves the tile configuration and data.
void probe_amx(CpuFeatures& f, bool tile, bool int8, bool bf16, uint64_t xcr0) {
  if (!tile || !int8) {
    f.amx_status = "no AMX-INT8 on this CPU";
  } else if ((xcr0 & (uint64_t{3} << 17)) != (uint64_t{3} << 17)) {
    f.amx_status = "the OS does not enable the tile state (XCR0)";
  } else if (const std::string refused = amx::request_tile_permission(); !refused.empty()) {
    f.amx_status = refused;
  } else {
    f.amx_tile = f.amx_int8 = true;
    f.amx_bf16 = bf16;
    f.amx_status = "usable";
  }
}

CpuFeatures probe() {
  CpuFeatures f;
  f.amx_status = "no AMX-INT8 on this CPU";
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return f;
  const bool amd = ebx == 0x68747541 && edx == 0x69746e65 && ecx == 0x444d4163;  // "AuthenticAMD"
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return f;
  const unsigned family = ((eax >> 8) & 0xf) + ((eax >> 20) & 0xff);
  const bool osxsave = (ecx >> 27) & 1;
  const bool avx = (ecx >> 28) & 1;
  const bool fma = (ecx >> 12) & 1;
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = read_xcr0();
  const bool ymm_state = (xcr0 & 0x6) == 0x6;
  const bool zmm_state = ymm_state && (xcr0 & 0xe0) == 0xe0;
  if (!ymm_state) return f;
  f.fma = fma;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  f.avx2 = (ebx >> 5) & 1;
  if (zmm_state) {
    f.avx512f = (ebx >> 16) & 1;
    f.avx512bw = (ebx >> 30) & 1;
    f.avx512vl = (ebx >> 31) & 1;
    f.avx512_vnni = (ecx >> 11) & 1;
    // Family 19h with AVX-512 is Zen 4 (Zen 3 has none; Zen 5, family 1Ah, runs them whole).
    f.avx512_halves = amd && family == 0x19 && f.avx512f;
  }
  probe_amx(f, (edx >> 24) & 1, (edx >> 25) & 1, (edx >> 22) & 1, xcr0);
  unsigned max_subleaf = eax;
  if (max_subleaf >= 1) {
    __cpuid_count(7, 1, eax, ebx, ecx, edx);
    f.avx_vnni = (eax >> 4) & 1;
    f.avx512_bf16 = zmm_state && ((eax >> 5) & 1);
  }
  return f;
}
#elif defined(__aarch64__)
CpuFeatures probe() {
  CpuFeatures f;
  const unsigned long hwcap = getauxval(AT_HWCAP);
  const unsigned long hwcap2 = getauxval(AT_HWCAP2);
  f.neon = (hwcap >> 1) & 1;           // HWCAP_ASIMD
  f.neon_dotprod = (hwcap >> 20) & 1;  // HWCAP_ASIMDDP
  f.neon_i8mm = (hwcap2 >> 13) & 1;    // HWCAP2_I8MM
  f.neon_bf16 = (hwcap2 >> 14) & 1;    // HWCAP2_BF16
  return f;
}
#else
CpuFeatures probe() { return {}; }
#endif

}  // namespace

std::string CpuFeatures::to_string() const {
  std::string out;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!out.empty()) out += ' ';
    out += name;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512_vnni, "avx512_vnni");
  add(avx_vnni, "avx_vnni");
  add(avx512_bf16, "avx512_bf16");
  add(avx512_halves, "avx512_halves");
  add(amx_tile, "amx_tile");
  add(amx_int8, "amx_int8");
  add(amx_bf16, "amx_bf16");
  add(neon, "neon");
  add(neon_dotprod, "dotprod");
  add(neon_i8mm, "i8mm");
  add(neon_bf16, "bf16");
  return out.empty() ? "none" : out;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = probe();
  return features;
}

}  // namespace dq4
