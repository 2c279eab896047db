// Attention on NEON (AArch64): attention.h's 16 lanes as four q registers, dot products of 4 keys
// at once (16 accumulators of the 32 registers).

#include <arm_neon.h>

#include "simd_tile.h"

namespace dq4::attention {
namespace {

struct Neon4 {
  struct F {
    float32x4_t v[4];  // lanes 0-3, 4-7, 8-11, 12-15
  };
  static constexpr int kValueHeads = 1;
  static constexpr int kKeys = 4;
  static constexpr int kPrefetchLocality = 3;

  template <class Op>
  static DQ4_ATTENTION_INLINE F each(Op op) {
    return {op(0), op(1), op(2), op(3)};
  }
  static DQ4_ATTENTION_INLINE F zero() { return set1(0.0f); }
  static DQ4_ATTENTION_INLINE F set1(float x) {
    const float32x4_t v = vdupq_n_f32(x);
    return {v, v, v, v};
  }
  static DQ4_ATTENTION_INLINE F load(const float* p) {
    return each([&](int i) { return vld1q_f32(p + 4 * i); });
  }
  static DQ4_ATTENTION_INLINE F load(const uint16_t* p) {
    return each([&](int i) { return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p + 4 * i), 16)); });
  }
  static DQ4_ATTENTION_INLINE void store(float* p, F x) {
    for (int i = 0; i < 4; ++i) vst1q_f32(p + 4 * i, x.v[i]);
  }
  static DQ4_ATTENTION_INLINE F fma(F a, F b, F c) {
    return each([&](int i) { return vfmaq_f32(c.v[i], a.v[i], b.v[i]); });
  }
  static DQ4_ATTENTION_INLINE F add(F a, F b) {
    return each([&](int i) { return vaddq_f32(a.v[i], b.v[i]); });
  }
  static DQ4_ATTENTION_INLINE F sub(F a, F b) {
    return each([&](int i) { return vsubq_f32(a.v[i], b.v[i]); });
  }
  static DQ4_ATTENTION_INLINE F mul(F a, F b) {
    return each([&](int i) { return vmulq_f32(a.v[i], b.v[i]); });
  }
  static DQ4_ATTENTION_INLINE F max(F a, F b) {
    return each([&](int i) { return vmaxq_f32(a.v[i], b.v[i]); });
  }
  static DQ4_ATTENTION_INLINE F round(F a) {
    return each([&](int i) { return vrndnq_f32(a.v[i]); });
  }
  static DQ4_ATTENTION_INLINE F pow2(F n) {
    return each([&](int i) {
      const int32x4_t biased = vaddq_s32(vcvtq_s32_f32(n.v[i]), vdupq_n_s32(127));
      return vreinterpretq_f32_s32(vshlq_n_s32(biased, 23));
    });
  }
  static DQ4_ATTENTION_INLINE F zero_below(F x, F limit, F y) {
    return each([&](int i) {
      const uint32x4_t below = vcltq_f32(x.v[i], limit.v[i]);
      return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(y.v[i]), below));
    });
  }
  // t8 = (lanes 0-3 + 8-11, 4-7 + 12-15), t4 = their sum; then two keys' t2 per register and
  // the pairwise adds of FADDP.
  static DQ4_ATTENTION_INLINE void reduce_keys(const F (&acc)[kKeys], float scale, float* out) {
    float32x4_t t4[kKeys];
    for (int b = 0; b < kKeys; ++b)
      t4[b] = vaddq_f32(vaddq_f32(acc[b].v[0], acc[b].v[2]), vaddq_f32(acc[b].v[1], acc[b].v[3]));
    float32x4_t t2[kKeys / 2];  // [t2[0], t2[1]] of key 2i, then of key 2i + 1
    for (int i = 0; i < kKeys / 2; ++i)
      t2[i] = vaddq_f32(vcombine_f32(vget_low_f32(t4[2 * i]), vget_low_f32(t4[2 * i + 1])),
                        vcombine_f32(vget_high_f32(t4[2 * i]), vget_high_f32(t4[2 * i + 1])));
    vst1q_f32(out, vmulq_f32(vpaddq_f32(t2[0], t2[1]), vdupq_n_f32(scale)));
  }
};

bool supported(const CpuFeatures& f) { return f.neon; }

}  // namespace

extern const Kernel kNeonKernel = {"neon", "f32_f32bf16kv_f32_neon_8rows", "neon", supported,
                                   run_simd<Neon4>};

}  // namespace dq4::attention
