// Rotary position embedding, Hugging Face's rotate_half layout and the interleaved one
// (dq4/ops.h).

#include <cmath>

#include "dq4/layers/ops.h"

namespace dq4::ops {

void rope_angles(int64_t position, const float* inv_freq, int64_t half, float* cos_a,
                 float* sin_a) {
  for (int64_t i = 0; i < half; ++i) {
    // The angle rounded to f32 as transformers computes it; its cosine and sine rounded once.
    const float angle = static_cast<float>(position) * inv_freq[i];
    cos_a[i] = static_cast<float>(std::cos(static_cast<double>(angle)));
    sin_a[i] = static_cast<float>(std::sin(static_cast<double>(angle)));
  }
}

void rope(float* x, int64_t heads, int64_t half, const float* cos_a, const float* sin_a) {
  for (int64_t h = 0; h < heads; ++h) {
    float* v = x + h * 2 * half;
    for (int64_t i = 0; i < half; ++i) {
      const float a = v[i], b = v[i + half];
      v[i] = a * cos_a[i] - b * sin_a[i];
      v[i + half] = b * cos_a[i] + a * sin_a[i];
    }
  }
}

void rope_interleaved(float* x, int64_t heads, int64_t half, const float* cos_a,
                      const float* sin_a) {
  for (int64_t h = 0; h < heads; ++h) {
    float* v = x + h * 2 * half;
    for (int64_t i = 0; i < half; ++i) {
      const float a = v[2 * i], b = v[2 * i + 1];
      v[2 * i] = a * cos_a[i] - b * sin_a[i];
      v[2 * i + 1] = b * cos_a[i] + a * sin_a[i];
    }
  }
}

}  // namespace dq4::ops
