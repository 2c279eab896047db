// Gemma 2, Gemma 3 and Phi-3 checkpoints in the compressed-tensors W4A8 layout llm-compressor
// writes (fixtures made here: a tiny synthetic model of each, F32, quantized by
// quantize_checkpoint with one scheme per module, group 32): Phi-3's fused qkv_proj and
// gate_up_proj are quantized as the single modules they are, and load as dq4's fused layers
// directly; every model loads and predicts what its F32 original predicts, within the error
// int4 weights and int8 activations make.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "dq4/convert/quantize.h"
#include "dq4/convert/synth.h"
#include "dq4/io/checkpoint.h"
#include "dq4/model/architecture.h"
#include "dq4/model/kv_cache.h"
#include "dq4/model/model.h"
#include "safetensors_writer.h"

namespace dq4::test {
namespace {

// The next-token logits after `ids` (one forward over the whole prompt).
std::vector<float> last_logits(const std::string& dir, const std::vector<int32_t>& ids) {
  const std::unique_ptr<Model> model = Model::load(dir);
  constexpr int64_t kBlock = 16;
  const int64_t blocks = (static_cast<int64_t>(ids.size()) + kBlock - 1) / kBlock;
  KvCache cache(model->kv_shape(blocks, kBlock));
  std::vector<int32_t> table(static_cast<size_t>(blocks));
  std::iota(table.begin(), table.end(), 0);
  std::vector<float> logits(static_cast<size_t>(model->vocab_size()));
  const SequenceInput input{ids, 0, table, SequenceInput::Logits::last};
  model->forward(std::span<const SequenceInput>(&input, 1), cache, logits.data());
  return logits;
}

class QuantizedCheckpoint : public testing::TestWithParam<const char*> {};

TEST_P(QuantizedCheckpoint, LoadsAndPredictsWhatTheOriginalDoes) {
  const std::string preset = GetParam();
  ScratchDir scratch;
  SynthOptions s = synth_preset(preset);
  s.dtype = Dtype::F32;
  s.output_dir = scratch.file("f32");
  write_synthetic_model(s);
  QuantizeOptions q;
  q.input_dir = s.output_dir;
  q.modules = Architecture::read(s.output_dir).linear_modules();
  q.output_dir = scratch.file("w4a8");
  q.group_size = 32;
  q.quantize_activations = true;
  q.format = WeightFormat::pack_quantized;
  const QuantizeReport report = quantize_checkpoint(q);
  // All but an untied head, which the quantizer leaves dense as llm-compressor does.
  EXPECT_EQ(report.quantized_modules,
            static_cast<int64_t>(q.modules.size()) - (s.config.tie_word_embeddings ? 0 : 1));

  const Checkpoint ckpt = Checkpoint::open_dir(q.output_dir);
  const bool phi3 = s.config.architecture == "Phi3ForCausalLM";
  const std::string layer = "model.layers.0.";
  for (const std::string module :
       phi3 ? std::vector<std::string>{"self_attn.qkv_proj", "mlp.gate_up_proj"}
            : std::vector<std::string>{"self_attn.q_proj", "mlp.gate_proj"})
    EXPECT_NE(ckpt.find(layer + module + ".weight_packed"), nullptr) << module;
  if (s.config.architecture.starts_with("Gemma"))
    EXPECT_NE(ckpt.find(layer + "post_feedforward_layernorm.weight"), nullptr);

  const std::unique_ptr<Model> model = Model::load(q.output_dir);
  const std::vector<std::string> lines = model->describe();
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines[0].find("W4A8"), std::string::npos) << lines[0];

  std::vector<int32_t> ids(24);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = static_cast<int32_t>((i * 97 + 13) % static_cast<size_t>(s.config.vocab_size));
  const std::vector<float> want = last_logits(s.output_dir, ids);
  const std::vector<float> got = last_logits(q.output_dir, ids);
  // int4 weights (group 32) and int8 activations move the logits of these tiny, sharp models by
  // a fair fraction of their spread, but not their shape: the centered logits stay aligned
  // (cosine > 0.9; a model whose layout were misread, e.g. q/k/v rows swapped, is near 0).
  const auto centered = [](const std::vector<float>& v) {
    const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    std::vector<double> c;
    for (float x : v) c.push_back(x - mean);
    return c;
  };
  const std::vector<double> a = centered(want), b = centered(got);
  const double cosine = std::inner_product(a.begin(), a.end(), b.begin(), 0.0) /
                        std::sqrt(std::inner_product(a.begin(), a.end(), a.begin(), 0.0) *
                                  std::inner_product(b.begin(), b.end(), b.begin(), 0.0));
  EXPECT_GT(cosine, 0.9);
  EXPECT_LT(cosine, 1.0) << "the quantized model computed exactly the F32 one";
}

INSTANTIATE_TEST_SUITE_P(TinyPresets, QuantizedCheckpoint,
                         testing::Values("tiny-gemma2", "tiny-gemma3", "tiny-phi3"),
                         [](const testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace dq4::test
