#pragma once
// Test data for the attention kernel family: one list of cases shared by the tests, a paged KV
// cache generator (shuffled block tables, NaN in every slot no token owns), a runner and a
// double-precision softmax attention to judge accuracy by.

#include <cstdint>
#include <string>
#include <vector>

#include "dq4/kernels/attention.h"
#include "dq4/kernels/thread_pool.h"

namespace dq4::test {

struct AttentionCase {
  int64_t head_dim = 64, num_kv_heads = 1, group = 1;  // num_heads = num_kv_heads * group
  int64_t tokens = 1, first_position = 0, window = 0, block_size = 16;
  attention::KvType type = attention::KvType::f32;
  int threads = 1;
  int64_t ld_pad = 0, stride_pad = 0;  // extra floats per q / out row, per cache block
  float magnitude = 1;                 // q and k are uniform in [-magnitude, magnitude]
  float softcap = 0;                   // attention logit soft-capping; 0 = none

  int64_t num_heads() const { return num_kv_heads * group; }
  int64_t context() const { return first_position + tokens; }
  std::string name() const;
};

// The shared list: head_dim 8, 16, 40, 64, 72, 80, 128; GQA ratios 1, 2, 4, 8; 1..40 new tokens
// with and without a cached prefix; windows 0 and small; soft-capping off and on (a cap near the
// scores' size, so that tanh bends them); block sizes 1, 16, 32; F32 and BF16 (BF16 decode
// rows with 1, 4 and 8 heads per kv head); 1, 2 and 3 threads; padded strides.
std::vector<AttentionCase> attention_cases();

struct AttentionData {
  std::vector<float> q;                    // [tokens, ld]
  std::vector<float> keys32, values32;     // the cache as F32 (kept for F32 cases)
  std::vector<uint16_t> keys16, values16;  // the cache as BF16 (kept for BF16 cases)
  std::vector<int32_t> block_table;
  int64_t ld = 0, block_stride = 0;

  attention::Args args(const AttentionCase& c, float* out) const;
  // Key (keys true) or value element d of token j of kv head g, as f32.
  float kv(const AttentionCase& c, bool keys, int64_t g, int64_t j, int64_t d) const;
};
AttentionData make_attention_data(const AttentionCase& c, uint32_t seed = 1);

// Runs `kernel` on a pool of c.threads; returns out [tokens, ld], padding holding kOutFill.
constexpr float kOutFill = -12345.0f;
std::vector<float> run_attention(const AttentionCase& c, const AttentionData& d,
                                 const attention::Kernel& kernel);

// Row i of head h in f64: value[d] = sum_j w_j v_j[d] and magnitude[d] = sum_j w_j |v_j[d]|
// with the exact softmax weights w (of the scores the stored keys give); for error bounds, the
// largest f32 rounding error of a score the dot product and scale may make, the largest
// |s_j - max s| and the number of keys.
struct ExactAttention {
  std::vector<double> value, magnitude;
  double score_error = 0, spread = 0;
  int64_t keys = 0;
};
ExactAttention exact_attention(const AttentionCase& c, const AttentionData& d, int64_t i,
                               int64_t h);

// The attention kernels of this build that this CPU can run.
std::vector<const attention::Kernel*> runnable_attention_kernels();

}  // namespace dq4::test
