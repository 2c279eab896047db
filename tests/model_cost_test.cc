// Model::cost_per_token on tiny dense models, against the numbers worked out by hand from their
// configs. Every output size is a multiple of 64, so that no kernel's panel width pads the packed
// weights: a dense part of [n, k] packs n * k weights plus a bias slot per output (zero when the
// module has none), i.e. n * (k + 1) f32 values for F32 weights and n * (k / 2 + 1) dwords for
// BF16 (k even).

#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dq4/model/model.h"
#include "safetensors_writer.h"

namespace dq4 {
namespace {

using test::TestTensor;

constexpr int64_t kHidden = 64, kInter = 128, kLayers = 2, kHeads = 2, kKvHeads = 2, kHeadDim = 32,
                  kVocab = 128;

// A [rows, cols] tensor of small values in `dtype` ("F32" or "BF16"); norms get ones.
TestTensor tensor(const std::string& name, int64_t rows, int64_t cols, const std::string& dtype,
                  bool ones = false) {
  const size_t count = static_cast<size_t>(rows * cols), size = dtype == "F32" ? 4 : 2;
  std::vector<uint8_t> data(count * size);
  for (size_t i = 0; i < count; ++i) {
    const float v = ones ? 1.0f : 0.01f * static_cast<float>(static_cast<int>(i % 7) - 3);
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    if (size == 4)
      std::memcpy(data.data() + i * 4, &bits, 4);
    else {
      const uint16_t high = static_cast<uint16_t>(bits >> 16);  // exact for these values
      std::memcpy(data.data() + i * 2, &high, 2);
    }
  }
  std::vector<int64_t> shape = {rows, cols};
  if (rows == 1) shape = {cols};
  return {name, dtype, shape, data};
}

// A Llama model (embeddings tied, F32) or a Qwen3 one (own lm_head, q/k norms, BF16).
std::unique_ptr<Model> tiny_model(const test::ScratchDir& dir, bool qwen3) {
  const std::string dtype = qwen3 ? "BF16" : "F32";
  std::vector<TestTensor> tensors = {tensor("model.embed_tokens.weight", kVocab, kHidden, dtype),
                                     tensor("model.norm.weight", 1, kHidden, dtype, true)};
  if (qwen3) tensors.push_back(tensor("lm_head.weight", kVocab, kHidden, dtype));
  for (int64_t l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    tensors.push_back(tensor(p + "input_layernorm.weight", 1, kHidden, dtype, true));
    tensors.push_back(tensor(p + "post_attention_layernorm.weight", 1, kHidden, dtype, true));
    tensors.push_back(tensor(p + "self_attn.q_proj.weight", kHeads * kHeadDim, kHidden, dtype));
    tensors.push_back(tensor(p + "self_attn.k_proj.weight", kKvHeads * kHeadDim, kHidden, dtype));
    tensors.push_back(tensor(p + "self_attn.v_proj.weight", kKvHeads * kHeadDim, kHidden, dtype));
    tensors.push_back(tensor(p + "self_attn.o_proj.weight", kHidden, kHeads * kHeadDim, dtype));
    tensors.push_back(tensor(p + "mlp.gate_proj.weight", kInter, kHidden, dtype));
    tensors.push_back(tensor(p + "mlp.up_proj.weight", kInter, kHidden, dtype));
    tensors.push_back(tensor(p + "mlp.down_proj.weight", kHidden, kInter, dtype));
    if (qwen3) {
      tensors.push_back(tensor(p + "self_attn.q_norm.weight", 1, kHeadDim, dtype, true));
      tensors.push_back(tensor(p + "self_attn.k_norm.weight", 1, kHeadDim, dtype, true));
    }
  }
  test::write_safetensors(dir.file("model.safetensors"), tensors);
  const nlohmann::json config = {
      {"architectures", {qwen3 ? "Qwen3ForCausalLM" : "LlamaForCausalLM"}},
      {"model_type", qwen3 ? "qwen3" : "llama"},
      {"hidden_size", kHidden},
      {"intermediate_size", kInter},
      {"num_hidden_layers", kLayers},
      {"num_attention_heads", kHeads},
      {"num_key_value_heads", kKvHeads},
      {"head_dim", kHeadDim},
      {"vocab_size", kVocab},
      {"max_position_embeddings", 256},
      {"rms_norm_eps", 1e-6},
      {"rope_theta", 10000.0},
      {"hidden_act", "silu"},
      {"tie_word_embeddings", !qwen3},
      {"eos_token_id", 2}};
  test::write_file(dir.file("config.json"), config.dump());
  return Model::load(dir.path());
}

TEST(ModelCost, TiedF32LlamaMatchesTheHandCount) {
  test::ScratchDir dir;
  const std::unique_ptr<Model> model = tiny_model(dir, false);
  const TokenCost cost = model->cost_per_token();
  // Multiply-adds per layer: qkv 64 -> 192, o 64 -> 64, gate+up 64 -> 256, down 128 -> 64; the
  // tied head 64 -> 128.
  const int64_t layer_macs = 64 * 192 + 64 * 64 + 64 * 256 + 128 * 64;
  EXPECT_EQ(cost.linear_ops, 2 * (kLayers * layer_macs + 64 * 128));
  EXPECT_EQ(cost.head_ops, 2 * 64 * 128);
  // F32 packs: n * (k + 1) * 4 bytes per part.
  const int64_t layer_packed = (192 * 65 + 64 * 65 + 256 * 65 + 64 * 129) * 4;
  const int64_t head_packed = 128 * 65 * 4;
  const int64_t norms = (kLayers * 2 * kHidden + kHidden) * 4;  // two per layer and the final one
  const int64_t rope = kHeadDim / 2 * 4;                        // the inverse frequencies
  const int64_t embedding_row = kHidden * 4;
  EXPECT_EQ(cost.weight_bytes, static_cast<size_t>(kLayers * layer_packed + head_packed + norms +
                                                   rope + embedding_row));
  // Keys and values of every layer's kv heads: 2 * 2 layers * 2 heads * 32 dims * 4 bytes.
  EXPECT_EQ(cost.kv_bytes, size_t{1024});
  EXPECT_EQ(model->cost_per_token(attention::KvType::bf16).kv_bytes, size_t{512});
}

TEST(ModelCost, Bf16Qwen3WithItsOwnHeadMatchesTheHandCount) {
  test::ScratchDir dir;
  const std::unique_ptr<Model> model = tiny_model(dir, true);
  const TokenCost cost = model->cost_per_token();
  const int64_t layer_macs = 64 * 192 + 64 * 64 + 64 * 256 + 128 * 64;
  EXPECT_EQ(cost.linear_ops, 2 * (kLayers * layer_macs + 64 * 128));
  // BF16 packs: n * (k / 2 + 1) dwords per part; norms are held as f32.
  const int64_t layer_packed = (192 * 33 + 64 * 33 + 256 * 33 + 64 * 65) * 4;
  const int64_t head_packed = 128 * 33 * 4;
  const int64_t norms = (kLayers * (2 * kHidden + 2 * kHeadDim) + kHidden) * 4;  // q/k norms too
  const int64_t rope = kHeadDim / 2 * 4;
  const int64_t embedding_row = kHidden * 2;
  EXPECT_EQ(cost.weight_bytes, static_cast<size_t>(kLayers * layer_packed + head_packed + norms +
                                                   rope + embedding_row));
  EXPECT_EQ(cost.kv_bytes, size_t{1024});
  EXPECT_EQ(model->head().out_features(), kVocab);
  EXPECT_EQ(model->head().in_features(), kHidden);
}

}  // namespace
}  // namespace dq4
