// Attention on AVX-512F: x86_zmm_attention.h's 16 keys at once, the keys and values ahead
// prefetched into L1 (measured on Xeon cores). Compiled with -mavx2 -mfma -mavx512f.

#include "x86_zmm_attention.h"

namespace dq4::attention {

extern const Kernel kAvx512fKernel = {"avx512f", "f32_f32bf16kv_f32_avx512f_8rows",
                                      "avx2+fma+avx512f", avx512f_supported, run_simd<Zmm>};

}  // namespace dq4::attention
