// The new architectures quantized W4A8 against llama.cpp on the very same int4 weights: tiny
// synthetic models (F16, so that every group scale is exact in Q4_0's f16) quantized W4A8 G32 by
// `dq4 quantize` and exported by `dq4 export-gguf` (Q4_0 blocks holding the same int4 values and
// scales; router, norms, embeddings and head F16 on both sides). llama.cpp generates greedily; dq4
// runs the same ids teacher-forced, so that every step compares the two on one context.
//
// The activations are quantized differently: dq4 to int8 per row (one scale per token and
// module), llama.cpp to Q8_0 per block of 32 (and to f16 for its F16 routers and head). Each
// side's rounding is of the order of 1/254 of a row's (or block's) largest activation, independent
// between the two, and these tiny, sharp models carry it to the logits through every layer;
// where a router's k-th and next experts are near-tied, the two sides may pick different ones,
// and that token's (and through attention its successors') outputs move by more. Hence, on
// log-probabilities of llama.cpp's 8 most probable tokens at each step (a relative error of the
// probabilities): the median step within kTypical (the rounding alone; measured 0.02-0.13 nats
// over these models) and every step within kRouterFlip (measured up to 0.65 where a router flips);
// a wrong int4 value, scale, block order, expert order or activation path moves every step by
// more than that. Greedy ids must be equal wherever llama.cpp's first two tokens are more than
// kClearMargin apart (below it the typical error may swap a near-tie), and every model must have
// such steps, so that the check cannot pass vacuously.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "dq4/convert/gguf_export.h"
#include "dq4/convert/quantize.h"
#include "dq4/convert/synth.h"
#include "dq4/model/architecture.h"
#include "dq4/model/kv_cache.h"
#include "dq4/model/model.h"
#include "llamacpp_reference.h"
#include "safetensors_writer.h"

namespace dq4::test {
namespace {

constexpr double kTypical = 0.2;      // nats, the median step
constexpr double kRouterFlip = 1.0;   // nats, any step
constexpr double kClearMargin = 0.5;  // nats
constexpr int64_t kMinClearSteps = 4;

// dq4's next-token distributions after each of the prompt's last token and the reference's
// generated ids but the last: one forward over the whole sequence, every row's logits.
std::vector<std::vector<float>> teacher_forced(const std::string& dir, const Prompt& prompt,
                                               const std::vector<int32_t>& generated) {
  const std::unique_ptr<Model> model = Model::load(dir);
  std::vector<int32_t> ids = prompt.ids;
  ids.insert(ids.end(), generated.begin(), generated.end() - 1);
  const auto total = static_cast<int64_t>(ids.size());
  constexpr int64_t kBlock = 16;
  const int64_t blocks = (total + kBlock - 1) / kBlock;
  KvCache cache(model->kv_shape(blocks, kBlock));
  std::vector<int32_t> table(static_cast<size_t>(blocks));
  std::iota(table.begin(), table.end(), 0);
  const int64_t vocab = model->vocab_size();
  std::vector<float> logits(static_cast<size_t>(total * vocab));
  const SequenceInput input{ids, 0, table, SequenceInput::Logits::all};
  model->forward(std::span<const SequenceInput>(&input, 1), cache, logits.data());
  std::vector<std::vector<float>> steps;
  for (int64_t r = static_cast<int64_t>(prompt.ids.size()) - 1; r < total; ++r)
    steps.push_back(softmax(logits.data() + r * vocab, vocab));
  return steps;
}

class LlamaCppW4A8Differential : public testing::TestWithParam<const char*> {};

TEST_P(LlamaCppW4A8Differential, TeacherForcedProbabilitiesAndClearGreedyIdsMatch) {
  const std::string preset = GetParam();
  ScratchDir scratch;
  SynthOptions o = synth_preset(preset);
  o.dtype = Dtype::F16;
  // Q4_0 blocks of 32 along every module's input: the dense presets' intermediate (200) rounded
  // down to a multiple of 32.
  o.config.intermediate_size -= o.config.intermediate_size % 32;
  o.config.shared_intermediate_size -= o.config.shared_intermediate_size % 32;  // Granite 4's MLP
  for (const char c : preset) o.seed = o.seed * 31 + static_cast<unsigned char>(c);  // per preset
  o.output_dir = scratch.file("model");  // not named after the preset (see the F32 test)
  write_synthetic_model(o);
  QuantizeOptions q;
  q.input_dir = o.output_dir;
  q.modules = Architecture::read(o.output_dir).linear_modules();
  q.output_dir = scratch.file("w4a8");
  q.group_size = 32;
  quantize_checkpoint(q);
  GgufExportOptions e;
  e.model_dir = q.output_dir;
  e.output = scratch.file("w4a8.gguf");
  ASSERT_EQ(export_gguf(e).file_type, "Q4_0");

  // Long enough for Gemma's windows (8) to slide; Phi-3 within its original context (short
  // factors both sides; the F32 test covers the long ones).
  const int64_t vocab = o.config.vocab_size;
  const std::vector<Prompt> prompts = {{prompt_ids(16, vocab, 1), 24},
                                       {prompt_ids(40, vocab, 3), 8}};
  const std::vector<Generation> reference = run_llamacpp(e.output, prompts);
  ASSERT_EQ(reference.size(), prompts.size());
  std::vector<double> step_errors;
  int64_t clear = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const Generation& ref = reference[i];
    ASSERT_EQ(ref.ids.size(), static_cast<size_t>(prompts[i].n));
    ASSERT_EQ(ref.top.size(), ref.ids.size());
    const std::vector<std::vector<float>> ours = teacher_forced(q.output_dir, prompts[i], ref.ids);
    ASSERT_EQ(ours.size(), ref.ids.size());
    for (size_t step = 0; step < ours.size(); ++step) {
      SCOPED_TRACE("prompt " + std::to_string(i) + " step " + std::to_string(step));
      const auto& top = ref.top[step];
      ASSERT_GE(top.size(), 2u);
      double error = 0;
      for (const auto& [id, p] : top) {
        const double e = std::abs(std::log(static_cast<double>(ours[step][id])) - std::log(p));
        EXPECT_LE(e, kRouterFlip) << "token " << id << ": llama.cpp " << p << ", dq4 "
                                  << ours[step][id];
        error = std::max(error, e);
      }
      step_errors.push_back(error);
      if (std::log(top[0].second) - std::log(top[1].second) > kClearMargin) {
        ++clear;
        const auto& p = ours[step];
        EXPECT_EQ(std::max_element(p.begin(), p.end()) - p.begin(), ref.ids[step]);
      }
    }
  }
  std::nth_element(step_errors.begin(), step_errors.begin() + step_errors.size() / 2,
                   step_errors.end());
  EXPECT_LE(step_errors[step_errors.size() / 2], kTypical) << "median step's error";
  EXPECT_GE(clear, kMinClearSteps) << "too few steps with a clear greedy choice to compare";
}

INSTANTIATE_TEST_SUITE_P(TinyPresets, LlamaCppW4A8Differential,
                         testing::Values("tiny-qwen3-moe", "tiny-qwen2-moe", "tiny-mixtral",
                                         "tiny-olmoe", "tiny-gemma2", "tiny-gemma3", "tiny-granite",
                                         "tiny-olmo2", "tiny-olmo3", "tiny-exaone4",
                                         "tiny-ministral3", "tiny-ernie4_5", "tiny-ernie4_5-moe",
                                         "tiny-glm4", "tiny-glm4-moe", "tiny-phi3", "tiny-granite4",
                                         "tiny-granite4-nope", "tiny-granitemoe",
                                         "tiny-granitemoe-shared", "tiny-granite4-moe"),
                         preset_test_name);

}  // namespace
}  // namespace dq4::test
