#pragma once
// The element-wise and per-row operations a decoder layer runs besides Linear and attention, in
// f32. Each row's result depends only on that row, so a batch gives what rows run alone give.

#include <cstdint>

namespace dq4::ops {

// y[r] = weight * (x[r] * 1/sqrt(mean(x[r]^2) + eps)) for rows r of `cols` values (row strides
// ldx, ldy; y may be x). As transformers' LlamaRMSNorm computes it in f32.
void rms_norm(const float* x, int64_t rows, int64_t cols, int64_t ldx, const float* weight,
              float eps, float* y, int64_t ldy);

// Rotary embedding in Hugging Face's rotate_half layout. rope_angles() gives, for i < half, the
// cosine and sine of a = position * inv_freq[i] (a rounded to f32 as transformers computes it);
// rope() then rotates, in place, `heads` heads of 2 * half values (consecutive) of one row:
// (x[i], x[i + half]) <- (x[i] cos a - x[i + half] sin a, x[i + half] cos a + x[i] sin a).
void rope_angles(int64_t position, const float* inv_freq, int64_t half, float* cos_a, float* sin_a);
void rope(float* x, int64_t heads, int64_t half, const float* cos_a, const float* sin_a);
// The same rotation with each pair adjacent (GLM's and Ernie 4.5's interleaved layout):
// (x[2i], x[2i + 1]) <- (x[2i] cos a - x[2i + 1] sin a, x[2i + 1] cos a + x[2i] sin a).
void rope_interleaved(float* x, int64_t heads, int64_t half, const float* cos_a,
                      const float* sin_a);

// out[r][i] = silu(gate[r][i]) * up[r][i], silu(g) = g / (1 + exp(-g)); `gate_up` holds the gate
// in its first `cols` columns and up in the next `cols` (one fused Linear's output).
void silu_mul(const float* gate_up, int64_t rows, int64_t cols, int64_t ld_gate_up, float* out,
              int64_t ldo);

// out[r][i] = gelu_tanh(gate[r][i]) * up[r][i] (Gemma's GeGLU), gelu_tanh(g) = 0.5 g (1 +
// tanh(sqrt(2 / pi) (g + 0.044715 g^3))) in f32 as PyTorch's gelu(approximate="tanh"); the
// layout of silu_mul().
void gelu_tanh_mul(const float* gate_up, int64_t rows, int64_t cols, int64_t ld_gate_up, float* out,
                   int64_t ldo);

// x[i] = cap * tanh(x[i] / cap) for i < n, in f32 (Gemma 2's final logit soft-capping).
void soft_cap(float* x, int64_t n, float cap);

// out[i] = exp((x[i] - shift) * scale) for i < n, within ~2 ulp where the argument is in
// [-87, 88], 0 below, infinity above (softmax weights of a vocabulary; NaN stays NaN).
void exp_scaled(const float* x, int64_t n, float shift, float scale, float* out);

}  // namespace dq4::ops
