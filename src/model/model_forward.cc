// Model::forward: one batched pass of a Llama-family decoder over several sequences.
//
//   x = embed(tokens)
//   per layer: h = rmsnorm(x); q,k,v = qkv(h); [Qwen3: per-head rmsnorm of q, k]; rope(q, k);
//              store k, v in the cache; x += o(attention(q, cache)); h = rmsnorm(x);
//              x += down(silu(gate(h)) * up(h))
//   logits = head(rmsnorm(x)) for the rows asked for
// Gemma: embeddings scaled by sqrt(hidden), the attention's and the MLP's outputs normalized
// before their residual adds (post_attention / post_feedforward norms, the MLP's input by
// pre_feedforward), GeGLU, per-layer sliding windows and rope bases, soft-capped scores and
// logits. Phi-3: rope on the first rotary_dim values of each head, longrope's factors per sequence.

#include <cmath>
#include <cstring>

#include "dq4/kernels/error.h"
#include "dq4/kernels/half.h"
#include "dq4/kernels/thread_pool.h"
#include "dq4/layers/ops.h"
#include "model_impl.h"
#include "moe_forward.h"
#include "weights.h"

namespace dq4 {
namespace {

void check_batch(std::span<const SequenceInput> batch, const KvCache& cache,
                 const Architecture& arch) {
  const ModelConfig& c = arch.config;
  const KvCacheShape& s = cache.shape();
  if (s.layers != c.num_hidden_layers || s.kv_heads != c.num_key_value_heads ||
      s.head_dim != c.head_dim)
    throw Error("forward: the KV cache was shaped for another model (layers, kv heads, head_dim)");
  for (size_t i = 0; i < batch.size(); ++i) {
    const SequenceInput& seq = batch[i];
    // The message is built only on failure: a valid batch allocates nothing.
    const auto fail = [i](const std::string& what) {
      throw Error("forward: sequence " + std::to_string(i) + ": " + what);
    };
    if (seq.tokens.empty()) fail("no tokens");
    if (seq.start < 0) fail("negative start");
    const int64_t end = seq.start + static_cast<int64_t>(seq.tokens.size());
    if (end > arch.context_length)
      fail("positions up to " + std::to_string(end) + " exceed the context of " +
           std::to_string(arch.context_length) + " tokens");
    if (static_cast<int64_t>(seq.block_table.size()) * s.block_size < end)
      fail("block table of " + std::to_string(seq.block_table.size()) +
           " blocks is too short for " + std::to_string(end) + " tokens");
    for (int32_t b : seq.block_table)
      if (b < 0 || b >= s.blocks) fail("block " + std::to_string(b) + " is outside the cache");
    for (int32_t t : seq.tokens)
      if (t < 0 || t >= c.vocab_size)
        fail("token id " + std::to_string(t) + " is outside the vocabulary of " +
             std::to_string(c.vocab_size));
  }
}

// Copies the key and value heads of one row into the cache slot of `position`.
void store_kv(KvCache& cache, int64_t layer, std::span<const int32_t> block_table, int64_t position,
              const float* k, const float* v) {
  const KvCacheShape& s = cache.shape();
  const int64_t block = block_table[static_cast<size_t>(position / s.block_size)];
  const int64_t slot = position % s.block_size;
  for (int64_t g = 0; g < s.kv_heads; ++g) {
    const int64_t offset = block * cache.block_stride() + (g * s.block_size + slot) * s.head_dim;
    const float* ks = k + g * s.head_dim;
    const float* vs = v + g * s.head_dim;
    if (s.type == attention::KvType::f32) {
      std::memcpy(static_cast<float*>(cache.keys(layer)) + offset, ks, s.head_dim * sizeof(float));
      std::memcpy(static_cast<float*>(cache.values(layer)) + offset, vs,
                  s.head_dim * sizeof(float));
    } else {
      uint16_t* kd = static_cast<uint16_t*>(cache.keys(layer)) + offset;
      uint16_t* vd = static_cast<uint16_t*>(cache.values(layer)) + offset;
      for (int64_t d = 0; d < s.head_dim; ++d) {
        kd[d] = f32_to_bf16(ks[d]);
        vd[d] = f32_to_bf16(vs[d]);
      }
    }
  }
}

// v rounded to the embedding table's dtype (Gemma scales its embeddings in that dtype).
float round_to(Dtype dtype, float v) {
  if (dtype == Dtype::BF16) return bf16_to_f32(f32_to_bf16(v));
  if (dtype == Dtype::F16) return f16_to_f32(f32_to_f16(v));
  return v;
}

template <class T>
T* sized(std::vector<T>& v, int64_t count) {
  if (v.size() < static_cast<size_t>(count)) v.resize(static_cast<size_t>(count));
  return v.data();
}

}  // namespace

int64_t Model::logit_rows(std::span<const SequenceInput> batch) {
  int64_t rows = 0;
  for (const SequenceInput& s : batch) {
    if (s.logits == SequenceInput::Logits::last) rows += 1;
    if (s.logits == SequenceInput::Logits::all) rows += static_cast<int64_t>(s.tokens.size());
  }
  return rows;
}

// Each layer is five jobs over the pool, the rows of every sequence together:
//   [norm + quantize | qkv | q/k norms, rope, KV store]  [attention]  [quantize | x += o]
//   [norm + quantize | gate/up]  [silu + quantize | x += down]
// (Linear::forward runs a product with the row work before and after it in one job; o and down
// add into x in their epilogue.)
void Model::forward(std::span<const SequenceInput> batch, KvCache& cache, float* logits,
                    ThreadPool* pool_arg) {
  Impl& m = *impl_;
  const ModelConfig& c = m.arch.config;
  ThreadPool& pool = pool_arg != nullptr ? *pool_arg : ThreadPool::global();
  check_batch(batch, cache, m.arch);

  const int64_t hidden = c.hidden_size, head_dim = c.head_dim;
  const int64_t q_cols = c.num_attention_heads * head_dim,
                kv_cols = c.num_key_value_heads * head_dim;
  const int64_t qkv_cols = q_cols + 2 * kv_cols, inter = c.intermediate_size;
  int64_t rows = 0;
  for (const SequenceInput& s : batch) rows += static_cast<int64_t>(s.tokens.size());

  Impl::Workspace& ws = m.ws;
  float* x = sized(ws.x, rows * hidden);
  float* h = sized(ws.h, rows * hidden);
  float* qkv = sized(ws.qkv, rows * qkv_cols);
  float* attn = sized(ws.attn, rows * q_cols);
  // Embeddings, widened from the table (Gemma: scaled in the table's dtype, as transformers
  // does); each row's rope cosines and sines (rotary_dim / 2 of each), shared by every layer
  // (Gemma 3, OLMo 3: one set for the sliding layers, one for the others), its sequence and
  // position, and Ministral 3's scale of its queries.
  const Architecture& arch = m.arch;
  const int64_t half = arch.rotary_dim / 2;
  float* rope_cos = sized(ws.rope_cos, rows * half);
  float* rope_sin = sized(ws.rope_sin, rows * half);
  const bool local_rope = !m.inv_freq_local.empty();
  float* rope_cos_local = local_rope ? sized(ws.rope_cos_local, rows * half) : nullptr;
  float* rope_sin_local = local_rope ? sized(ws.rope_sin_local, rows * half) : nullptr;
  int32_t* row_sequence = sized(ws.row_sequence, rows);
  int64_t* row_position = sized(ws.row_position, rows);
  const bool queries_scaled = arch.query_scale_beta > 0;
  float* query_scale = queries_scaled ? sized(ws.query_scale, rows) : nullptr;
  {
    int64_t r = 0;
    const size_t row_bytes = static_cast<size_t>(hidden) * dtype_size(m.embedding_dtype);
    const float normalizer = round_to(m.embedding_dtype, std::sqrt(static_cast<float>(hidden)));
    for (size_t b = 0; b < batch.size(); ++b) {
      const SequenceInput& s = batch[b];
      // longrope (as transformers): the long factors when the sequence is longer than the
      // original context.
      const int64_t length = std::max(s.length, s.start + static_cast<int64_t>(s.tokens.size()));
      const float* inv_freq = !m.inv_freq_long.empty() && length > arch.longrope_original_context
                                  ? m.inv_freq_long.data()
                                  : m.inv_freq.data();
      for (size_t i = 0; i < s.tokens.size(); ++i, ++r) {
        float* xr = x + r * hidden;
        model::widen_row(m.embedding.data() + static_cast<size_t>(s.tokens[i]) * row_bytes,
                         m.embedding_dtype, hidden, xr);
        if (arch.gemma)
          for (int64_t k = 0; k < hidden; ++k)
            xr[k] = round_to(m.embedding_dtype, xr[k] * normalizer);
        if (arch.embedding_multiplier != 1.0f)
          for (int64_t k = 0; k < hidden; ++k)
            xr[k] = round_to(m.embedding_dtype, xr[k] * arch.embedding_multiplier);
        row_sequence[r] = static_cast<int32_t>(b);
        row_position[r] = s.start + static_cast<int64_t>(i);
        ops::rope_angles(row_position[r], inv_freq, half, rope_cos + r * half, rope_sin + r * half);
        if (arch.rope_attention_factor != 1.0f)
          for (int64_t k = 0; k < half; ++k) {
            rope_cos[r * half + k] *= arch.rope_attention_factor;
            rope_sin[r * half + k] *= arch.rope_attention_factor;
          }
        if (local_rope)
          ops::rope_angles(row_position[r], m.inv_freq_local.data(), half,
                           rope_cos_local + r * half, rope_sin_local + r * half);
        if (queries_scaled) {  // Ministral 3, in f32 as transformers computes it
          const float periods = std::floor(static_cast<float>(row_position[r]) /
                                           static_cast<float>(arch.query_scale_context));
          query_scale[r] =
              1.0f + static_cast<float>(arch.query_scale_beta) * std::log(1.0f + periods);
        }
      }
    }
  }

  const float eps = static_cast<float>(c.rms_norm_eps);
  for (size_t l = 0; l < m.layers.size(); ++l) {
    const DecoderLayer& layer = m.layers[l];
    const int64_t li = static_cast<int64_t>(l);
    const bool local = arch.local_layer(li);
    const bool rotates = arch.layer_rope[l];
    const float* cos_l = local ? rope_cos_local : rope_cos;
    const float* sin_l = local ? rope_sin_local : rope_sin;

    // h = rmsnorm(x); qkv = qkv(h) (OLMo, EXAONE 4: qkv(x)); then per row: q/k norms (Qwen3),
    // rotary embeddings, and the new keys and values into the cache.
    const auto input_norm = [&](int64_t r0, int64_t r1) {
      ops::rms_norm(x + r0 * hidden, r1 - r0, hidden, hidden, layer.input_norm.data(), eps,
                    h + r0 * hidden, hidden);
    };
    const auto rope_and_store = [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        float* q = qkv + r * qkv_cols;
        float* k = q + q_cols;
        if (m.arch.qk_norm_whole) {
          ops::rms_norm(q, 1, q_cols, q_cols, layer.q_norm.data(), eps, q, q_cols);
          ops::rms_norm(k, 1, kv_cols, kv_cols, layer.k_norm.data(), eps, k, kv_cols);
        } else if (!layer.q_norm.empty()) {
          ops::rms_norm(q, c.num_attention_heads, head_dim, head_dim, layer.q_norm.data(), eps, q,
                        head_dim);
          ops::rms_norm(k, c.num_key_value_heads, head_dim, head_dim, layer.k_norm.data(), eps, k,
                        head_dim);
        }
        // Each head's first rotary_dim values (all of them but for Phi-3's partial rotary;
        // none in NoPE layers).
        if (rotates) {
          const auto rotate = arch.rope_interleaved ? ops::rope_interleaved : ops::rope;
          for (int64_t hd = 0; hd < c.num_attention_heads; ++hd)
            rotate(q + hd * head_dim, 1, half, cos_l + r * half, sin_l + r * half);
          for (int64_t hd = 0; hd < c.num_key_value_heads; ++hd)
            rotate(k + hd * head_dim, 1, half, cos_l + r * half, sin_l + r * half);
        }
        if (queries_scaled)
          for (int64_t i = 0; i < q_cols; ++i) q[i] *= query_scale[r];
        store_kv(cache, li, batch[static_cast<size_t>(row_sequence[r])].block_table,
                 row_position[r], k, k + kv_cols);
      }
    };
    const bool input_normed = !layer.input_norm.empty();
    layer.qkv.forward(input_normed ? h : x, rows, hidden, qkv, qkv_cols, &pool,
                      {.before = input_normed ? FunctionRef<void(int64_t, int64_t)>(input_norm)
                                              : FunctionRef<void(int64_t, int64_t)>(),
                       .after = rope_and_store});

    // Attention of every sequence in one job over the pool (heads and row blocks as tasks).
    {
      int64_t r = 0;
      ws.attention.clear();
      for (const SequenceInput& s : batch) {
        attention::Args a;
        a.q = qkv + r * qkv_cols;
        a.ldq = qkv_cols;
        a.out = attn + r * q_cols;
        a.ldo = q_cols;
        a.tokens = static_cast<int64_t>(s.tokens.size());
        a.first_position = s.start;
        a.num_heads = c.num_attention_heads;
        a.num_kv_heads = c.num_key_value_heads;
        a.head_dim = head_dim;
        a.window = arch.layer_window[l];
        a.scale = arch.attention_scale;
        a.softcap = arch.attention_softcap;
        a.kv.keys = cache.keys(li);
        a.kv.values = cache.values(li);
        a.kv.block_stride = cache.block_stride();
        a.kv.block_size = cache.block_size();
        a.kv.block_table = s.block_table.data();
        a.kv.type = cache.shape().type;
        a.pool = &pool;
        ws.attention.push_back(a);
        r += a.tokens;
      }
      attention::run_batch(ws.attention);
    }

    // x += o(attn); h = rmsnorm(x); gate_up = gate_up(h); act = silu(gate) * up; x += down(act)
    // Gemma: x += rmsnorm(o(attn)); h = rmsnorm(x) (pre_feedforward); act = gelu(gate) * up;
    // x += rmsnorm(down(act)), the outputs normalized in h (free once qkv and gate_up read it).
    // OLMo, EXAONE 4: as Gemma without the MLP's input norm, gate_up = gate_up(x).
    const auto add_normalized = [&](const std::vector<float>& norm) {
      return [&, weight = norm.data()](int64_t r0, int64_t r1) {
        ops::rms_norm(h + r0 * hidden, r1 - r0, hidden, hidden, weight, eps, h + r0 * hidden,
                      hidden);
        for (int64_t i = r0 * hidden; i < r1 * hidden; ++i) x[i] += h[i];
      };
    };
    // Granite: x += residual_multiplier * o(attn) as o(residual_multiplier * attn), the linear
    // layer's input scaled instead of its output (likewise for down).
    const auto scale_rows = [&](float* rows_of, int64_t cols) {
      return [&, rows_of, cols](int64_t r0, int64_t r1) {
        for (int64_t i = r0 * cols; i < r1 * cols; ++i) rows_of[i] *= arch.residual_multiplier;
      };
    };
    const bool residual_scaled = arch.residual_multiplier != 1.0f;
    if (arch.post_norms) {
      const auto post_attention = add_normalized(layer.post_attention_norm);
      layer.o.forward(attn, rows, q_cols, h, hidden, &pool, {.after = post_attention});
    } else {
      const auto scale_attention = scale_rows(attn, q_cols);
      layer.o.forward(
          attn, rows, q_cols, x, hidden, &pool,
          {.accumulate = true,
           .before = residual_scaled ? FunctionRef<void(int64_t, int64_t)>(scale_attention)
                                     : FunctionRef<void(int64_t, int64_t)>()});
    }
    const std::vector<float>& mlp_norm =
        arch.post_norms ? layer.pre_feedforward_norm : layer.post_attention_norm;
    const auto pre_mlp_norm = [&](int64_t r0, int64_t r1) {
      ops::rms_norm(x + r0 * hidden, r1 - r0, hidden, hidden, mlp_norm.data(), eps, h + r0 * hidden,
                    hidden);
    };
    if (layer.sparse()) {
      model::moe_mlp(m, layer, x, h, rows, pre_mlp_norm, pool);
      continue;
    }
    float* gate_up = sized(ws.gate_up, rows * 2 * inter);
    float* act = sized(ws.act, rows * inter);
    const bool mlp_normed = !mlp_norm.empty();
    layer.gate_up.forward(mlp_normed ? h : x, rows, hidden, gate_up, 2 * inter, &pool,
                          {.before = mlp_normed ? FunctionRef<void(int64_t, int64_t)>(pre_mlp_norm)
                                                : FunctionRef<void(int64_t, int64_t)>()});
    const auto gating = [&](int64_t r0, int64_t r1) {
      if (arch.activation == Activation::gelu_tanh)
        ops::gelu_tanh_mul(gate_up + r0 * 2 * inter, r1 - r0, inter, 2 * inter, act + r0 * inter,
                           inter);
      else
        ops::silu_mul(gate_up + r0 * 2 * inter, r1 - r0, inter, 2 * inter, act + r0 * inter, inter);
      if (residual_scaled)
        for (int64_t i = r0 * inter; i < r1 * inter; ++i) act[i] *= arch.residual_multiplier;
    };
    if (arch.post_norms) {
      const auto post_feedforward = add_normalized(layer.post_feedforward_norm);
      layer.down.forward(act, rows, inter, h, hidden, &pool,
                         {.before = gating, .after = post_feedforward});
    } else {
      layer.down.forward(act, rows, inter, x, hidden, &pool,
                         {.accumulate = true, .before = gating});
    }
  }

  // The final norm and the head, for the rows that need logits only.
  const int64_t out_rows = logit_rows(batch);
  if (out_rows == 0) return;
  float* head_in = sized(ws.head_in, out_rows * hidden);
  int64_t* head_rows = sized(ws.head_rows, out_rows);  // the row of x each head row takes
  {
    int64_t r = 0, o = 0;
    for (const SequenceInput& s : batch) {
      const int64_t n = static_cast<int64_t>(s.tokens.size());
      if (s.logits == SequenceInput::Logits::all)
        for (int64_t i = 0; i < n; ++i) head_rows[o++] = r + i;
      else if (s.logits == SequenceInput::Logits::last)
        head_rows[o++] = r + n - 1;
      r += n;
    }
  }
  const auto final_norm = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      ops::rms_norm(x + head_rows[r] * hidden, 1, hidden, hidden, m.final_norm.data(), eps,
                    head_in + r * hidden, hidden);
  };
  // Gemma 2: soft-capped; Granite: divided by logits_scaling.
  const auto finish_logits = [&](int64_t r0, int64_t r1) {
    float* first = logits + r0 * c.vocab_size;
    const int64_t n = (r1 - r0) * c.vocab_size;
    if (arch.final_softcap > 0) ops::soft_cap(first, n, arch.final_softcap);
    if (arch.logits_divisor != 1.0f)
      for (int64_t i = 0; i < n; ++i) first[i] /= arch.logits_divisor;
  };
  const bool finished = arch.final_softcap > 0 || arch.logits_divisor != 1.0f;
  m.head.forward(head_in, out_rows, hidden, logits, c.vocab_size, &pool,
                 {.before = final_norm,
                  .after = finished ? FunctionRef<void(int64_t, int64_t)>(finish_logits)
                                    : FunctionRef<void(int64_t, int64_t)>()});
}

}  // namespace dq4
