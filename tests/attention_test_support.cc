#include "attention_test_support.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "runnable_kernels.h"

namespace dq4::test {
namespace {

using attention::KvType;

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t bf16_bits(float f) {  // truncation: any bf16 value will do as test data
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return static_cast<uint16_t>(bits >> 16);
}

}  // namespace

std::string AttentionCase::name() const {
  return "hd" + std::to_string(head_dim) + " kv" + std::to_string(num_kv_heads) + "x" +
         std::to_string(group) + " tokens " + std::to_string(tokens) + " at " +
         std::to_string(first_position) + " window " + std::to_string(window) + " block " +
         std::to_string(block_size) + (type == KvType::bf16 ? " bf16" : " f32") + " threads " +
         std::to_string(threads) + " pad " + std::to_string(ld_pad) + "/" +
         std::to_string(stride_pad) + " magnitude " + std::to_string(magnitude) + " softcap " +
         std::to_string(softcap);
}

std::vector<AttentionCase> attention_cases() {
  const int64_t dims[] = {8, 16, 40, 64, 72, 80, 128};
  const int64_t groups[] = {1, 2, 4, 8};
  const int64_t blocks[] = {1, 16, 32};
  const int64_t windows[] = {0, 3, 0, 17};
  const int64_t pads[] = {0, 3, 16};
  const float softcaps[] = {0.0f, 1.5f, 0.0f, 0.0f, 4.0f};
  std::vector<AttentionCase> cases;
  int n = 0;
  // Every head_dim with every GQA ratio, the other parameters cycling.
  for (int64_t dim : dims)
    for (int64_t group : groups) {
      AttentionCase c;
      c.head_dim = dim;
      c.group = group;
      c.num_kv_heads = 1 + n % 3;
      c.tokens = 1 + (n * 7) % 40;
      c.first_position = n % 2 == 0 ? 0 : 45;
      c.window = windows[n % 4];
      c.block_size = blocks[n % 3];
      c.type = n % 2 == 0 ? KvType::f32 : KvType::bf16;
      c.threads = 1 + (n + n / 3) % 3;  // every kv head count meets every thread count
      c.ld_pad = pads[n % 3];
      c.stride_pad = pads[(n + 1) % 3];
      c.softcap = softcaps[n % 5];
      cases.push_back(c);
      ++n;
    }
  // 1..40 new tokens on the Llama-3.2-1B head shape (head_dim 64, 4 heads per kv head).
  for (int64_t tokens = 1; tokens <= 40; ++tokens) {
    AttentionCase c;
    c.num_kv_heads = 2;
    c.group = 4;
    c.tokens = tokens;
    c.first_position = tokens % 2 == 0 ? 0 : 21 + tokens;
    c.window = windows[tokens % 4];
    c.block_size = blocks[tokens % 3];
    c.type = tokens % 4 < 2 ? KvType::f32 : KvType::bf16;
    c.threads = 1 + static_cast<int>(tokens % 3);
    c.ld_pad = pads[(tokens + 2) % 3];
    c.softcap = softcaps[tokens % 5];
    cases.push_back(c);
  }
  // Long decode rows and a prefill chunk over several row blocks after a cached prefix.
  for (KvType type : {KvType::f32, KvType::bf16}) {
    AttentionCase decode;
    decode.num_kv_heads = 2;
    decode.group = 4;
    decode.first_position = 700;
    decode.block_size = type == KvType::f32 ? 16 : 32;
    decode.type = type;
    decode.threads = 2;
    cases.push_back(decode);
    AttentionCase prefill = decode;
    prefill.tokens = 70;
    prefill.first_position = 200;
    prefill.threads = 3;
    cases.push_back(prefill);
    prefill.window = 33;  // Gemma's local layers: soft-capped scores in a sliding window
    prefill.softcap = 2.0f;
    cases.push_back(prefill);
  }
  // BF16 values of a decode row read by one accumulate call (one head per kv head, as OLMoE's
  // multi-head attention, widened as loaded) and by two (eight heads per kv head, staged); five
  // rows make a pass of four, then one of a single row.
  for (int64_t group : {1, 8})
    for (int64_t tokens : {1, 5}) {
      AttentionCase decode;
      decode.head_dim = 128;
      decode.num_kv_heads = 3;
      decode.group = group;
      decode.tokens = tokens;
      decode.first_position = 300;
      decode.type = KvType::bf16;
      decode.threads = 2;
      cases.push_back(decode);
    }
  // Scores in the thousands: e^s overflows, softmax must not.
  AttentionCase large;
  large.num_kv_heads = 2;
  large.group = 2;
  large.tokens = 9;
  large.first_position = 20;
  large.magnitude = 30;
  cases.push_back(large);
  large.type = KvType::bf16;
  large.window = 4;
  cases.push_back(large);
  large.softcap = 50.0f;  // Gemma 2's cap: scores of thousands become at most 50
  cases.push_back(large);
  return cases;
}

attention::Args AttentionData::args(const AttentionCase& c, float* out) const {
  attention::Args a;
  a.q = q.data();
  a.ldq = ld;
  a.out = out;
  a.ldo = ld;
  a.tokens = c.tokens;
  a.first_position = c.first_position;
  a.num_heads = c.num_heads();
  a.num_kv_heads = c.num_kv_heads;
  a.head_dim = c.head_dim;
  a.window = c.window;
  a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  a.softcap = c.softcap;
  a.kv.type = c.type;
  a.kv.keys = c.type == KvType::f32 ? static_cast<const void*>(keys32.data()) : keys16.data();
  a.kv.values = c.type == KvType::f32 ? static_cast<const void*>(values32.data()) : values16.data();
  a.kv.block_stride = block_stride;
  a.kv.block_size = c.block_size;
  a.kv.block_table = block_table.data();
  return a;
}

float AttentionData::kv(const AttentionCase& c, bool keys, int64_t g, int64_t j, int64_t d) const {
  const int64_t at = block_table[j / c.block_size] * block_stride +
                     (g * c.block_size + j % c.block_size) * c.head_dim + d;
  if (c.type == KvType::f32) return (keys ? keys32 : values32)[at];
  return from_bits(static_cast<uint32_t>((keys ? keys16 : values16)[at]) << 16);
}

AttentionData make_attention_data(const AttentionCase& c, uint32_t seed) {
  std::mt19937 rng(seed * 7919u + static_cast<uint32_t>(c.head_dim * 131 + c.tokens * 17 +
                                                        c.first_position * 3 + c.group));
  std::uniform_real_distribution<float> qk(-c.magnitude, c.magnitude), v(-1.0f, 1.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  AttentionData d;
  d.ld = c.num_heads() * c.head_dim + c.ld_pad;
  d.q.assign(static_cast<size_t>(c.tokens * d.ld), nan);
  for (int64_t i = 0; i < c.tokens; ++i)
    for (int64_t k = 0; k < c.num_heads() * c.head_dim; ++k) d.q[i * d.ld + k] = qk(rng);

  // Two blocks more than the context needs, in shuffled order; NaN wherever no token lives.
  const int64_t used = (c.context() + c.block_size - 1) / c.block_size, blocks = used + 2;
  std::vector<int32_t> order(static_cast<size_t>(blocks));
  for (int64_t b = 0; b < blocks; ++b) order[b] = static_cast<int32_t>(b);
  std::shuffle(order.begin(), order.end(), rng);
  d.block_table.assign(order.begin(), order.begin() + used);
  d.block_stride = c.num_kv_heads * c.block_size * c.head_dim + c.stride_pad;
  std::vector<float> keys(static_cast<size_t>(blocks * d.block_stride), nan), values = keys;
  for (int64_t j = 0; j < c.context(); ++j)
    for (int64_t g = 0; g < c.num_kv_heads; ++g)
      for (int64_t k = 0; k < c.head_dim; ++k) {
        const int64_t at = d.block_table[j / c.block_size] * d.block_stride +
                           (g * c.block_size + j % c.block_size) * c.head_dim + k;
        keys[at] = qk(rng);
        values[at] = v(rng);
      }
  if (c.type == KvType::f32) {
    d.keys32 = std::move(keys);
    d.values32 = std::move(values);
  } else {
    for (float f : keys) d.keys16.push_back(bf16_bits(f));
    for (float f : values) d.values16.push_back(bf16_bits(f));
  }
  return d;
}

std::vector<float> run_attention(const AttentionCase& c, const AttentionData& d,
                                 const attention::Kernel& kernel) {
  std::vector<float> out(static_cast<size_t>(c.tokens * d.ld), kOutFill);
  ThreadPool pool(c.threads);
  attention::Args a = d.args(c, out.data());
  a.pool = &pool;
  attention::run(a, kernel);
  return out;
}

ExactAttention exact_attention(const AttentionCase& c, const AttentionData& d, int64_t i,
                               int64_t h) {
  const int64_t g = h / c.group, p = c.first_position + i;
  const int64_t lo = c.window > 0 ? std::max<int64_t>(0, p - c.window + 1) : 0;
  const double scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));  // as args() has it
  // Lane chains of ceil(head_dim / 16) fmas, a tree of 4 adds, the scale: each a rounding.
  const double u = 0x1p-24, steps = static_cast<double>((c.head_dim + 15) / 16 + 5);
  ExactAttention e;
  std::vector<double> s;
  for (int64_t j = lo; j <= p; ++j) {
    double dot = 0, magnitude = 0;
    for (int64_t k = 0; k < c.head_dim; ++k) {
      const double product =
          static_cast<double>(d.q[i * d.ld + h * c.head_dim + k]) * d.kv(c, true, g, j, k);
      dot += product;
      magnitude += std::fabs(product);
    }
    // Soft-capping: tanh's slope is at most 1, so the score's error does not grow; the division,
    // tanh and the product add a rounding each of at most the cap.
    const double cap = c.softcap;
    s.push_back(cap > 0 ? cap * std::tanh(dot * scale / cap) : dot * scale);
    e.score_error =
        std::max(e.score_error, steps * u * magnitude * scale + (cap > 0 ? 4 * u * cap : 0));
  }
  const double m = *std::max_element(s.begin(), s.end());
  double sum = 0;
  for (double& x : s) {
    e.spread = std::max(e.spread, m - x);
    sum += (x = std::exp(x - m));
  }
  e.keys = p - lo + 1;
  e.value.assign(static_cast<size_t>(c.head_dim), 0.0);
  e.magnitude = e.value;
  for (int64_t j = lo; j <= p; ++j)
    for (int64_t k = 0; k < c.head_dim; ++k) {
      const double w = s[j - lo] / sum, v = d.kv(c, false, g, j, k);
      e.value[k] += w * v;
      e.magnitude[k] += w * std::fabs(v);
    }
  return e;
}

std::vector<const attention::Kernel*> runnable_attention_kernels() {
  return supported_here(attention::family());
}

}  // namespace dq4::test
