// Attention on AVX-512F for AMD Zen 4: the same tiles as `avx512f`, but the keys and values ahead
// are prefetched into L2 rather than L1. A decode step's keys and values come from memory (the
// weights streamed since the last step evicted them); prefetched into L1 each line holds one of
// the core's few L1 fill buffers until it arrives, which there keeps a sweep far below the read
// bandwidth, while L2 keeps more lines in flight (docs/kernels.md). Compiled with -mavx2 -mfma
// -mavx512f.

#include "x86_zmm_attention.h"

namespace dq4::attention {
namespace {

struct ZmmPrefetchL2 : Zmm {
  static constexpr int kPrefetchLocality = 2;
};

bool preferred(const CpuFeatures& f) { return f.avx512_halves; }

}  // namespace

extern const Kernel kAvx512fZen4Kernel = {
    "avx512f_zen4",          "f32_f32bf16kv_f32_avx512fzen4_8rows",
    "avx2+fma+avx512f",      avx512f_supported,
    run_simd<ZmmPrefetchL2>, preferred};

}  // namespace dq4::attention
