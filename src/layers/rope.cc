// Rotary position embedding, Hugging Face rotate_half layout (dq4/ops.h).

#include <cmath>

#include "dq4/ops.h"

namespace dq4::ops {

void rope(float* x, int64_t heads, int64_t head_dim, int64_t position, const float* inv_freq) {
  const int64_t half = head_dim / 2;
  constexpr int64_t kMaxHalf = 512;
  float cos_a[kMaxHalf], sin_a[kMaxHalf];
  for (int64_t i = 0; i < half && i < kMaxHalf; ++i) {
    // The angle rounded to f32 as transformers computes it (position * inv_freq in f32), its
    // cosine and sine in double and rounded once.
    const float angle = static_cast<float>(position) * inv_freq[i];
    cos_a[i] = static_cast<float>(std::cos(static_cast<double>(angle)));
    sin_a[i] = static_cast<float>(std::sin(static_cast<double>(angle)));
  }
  for (int64_t h = 0; h < heads; ++h) {
    float* v = x + h * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      const float a = v[i], b = v[i + half];
      v[i] = a * cos_a[i] - b * sin_a[i];
      v[i + half] = b * cos_a[i] + a * sin_a[i];
    }
  }
}

}  // namespace dq4::ops
