// Gemma 2, Gemma 3 and Phi-3 checkpoints in the compressed-tensors W4A8 layout llm-compressor
// writes (fixtures made here: a tiny synthetic model of each, F32, quantized by
// quantize_checkpoint with one scheme per module, group 32): Phi-3's fused qkv_proj and
// gate_up_proj are quantized as the single modules they are, and load as dq4's fused layers
// directly; every model loads and predicts what its F32 original predicts, within the error
// int4 weights and int8 activations make. Gemma 3 multimodal checkpoints (fixtures made here from
// a synthetic Gemma 3: its config nested as text_config, its tensors renamed into either layout
// transformers writes, a vision tensor beside them) load as the text model they hold. Configs as
// transformers 5 writes them (rope settings in rope_parameters) are the same models.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>

#include "dq4/convert/quantize.h"
#include "dq4/convert/synth.h"
#include "dq4/io/checkpoint.h"
#include "dq4/model/architecture.h"
#include "dq4/model/kv_cache.h"
#include "dq4/model/model.h"
#include "expect_error.h"
#include "safetensors_writer.h"
#include "synth_model.h"

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
  for (const std::string& module :
       phi3 ? std::vector<std::string>{"self_attn.qkv_proj", "mlp.gate_up_proj"}
            : std::vector<std::string>{"self_attn.q_proj", "mlp.gate_proj"})
    EXPECT_NE(ckpt.find(layer + module + ".weight_packed"), nullptr) << module;
  if (s.config.architecture.starts_with("Gemma")) {
    EXPECT_NE(ckpt.find(layer + "post_feedforward_layernorm.weight"), nullptr);
  }

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

// `from` (a synthetic text model) as a multimodal checkpoint of `architecture` in `to`: its
// config.json as text_config (of `text_type`), its text tensors renamed "model.X" -> text_prefix +
// "X" and "lm_head.weight" -> head + ".weight" (data unchanged), and a vision tensor named with
// vision_prefix, which the text model must not read.
void write_multimodal(const std::string& from, const std::string& to,
                      const std::string& text_prefix, const std::string& head,
                      const std::string& vision_prefix,
                      const std::string& architecture = "Gemma3ForConditionalGeneration",
                      const std::string& text_type = "gemma3_text") {
  namespace fs = std::filesystem;
  fs::create_directories(to);
  for (const fs::directory_entry& f : fs::directory_iterator(from))
    if (f.path().filename() != "model.safetensors" && f.path().filename() != "config.json")
      fs::copy_file(f.path(), to + "/" + f.path().filename().string());
  nlohmann::json text = nlohmann::json::parse(read_file(from + "/config.json"));
  text.erase("architectures");
  text["model_type"] = text_type;
  const nlohmann::json config = {
      {"architectures", {architecture}}, {"model_type", "multimodal"}, {"text_config", text}};
  write_file(to + "/config.json", config.dump());

  const std::string bytes = read_file(from + "/model.safetensors");
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), sizeof header_size);
  const nlohmann::json header = nlohmann::json::parse(bytes.substr(8, header_size));
  std::string data = bytes.substr(8 + header_size);
  nlohmann::json renamed = nlohmann::json::object();
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__")
      renamed[name] = entry;
    else if (name == "lm_head.weight")
      renamed[head + ".weight"] = entry;
    else
      renamed[text_prefix + name.substr(std::string("model.").size())] = entry;
  }
  const std::vector<float> vision(4, 1.0f);
  renamed[vision_prefix + "vision_model.post_layernorm.weight"] = {
      {"dtype", "F32"}, {"shape", {4}}, {"data_offsets", {data.size(), data.size() + 16}}};
  data.append(reinterpret_cast<const char*>(vision.data()), 16);
  std::string out_header = renamed.dump();
  out_header.append((8 - out_header.size() % 8) % 8, ' ');
  write_file(to + "/model.safetensors",
             safetensors_bytes(out_header, std::vector<uint8_t>(data.begin(), data.end())));
}

// transformers 5 writes Gemma 3's rope as rope_parameters per layer type (rope_theta,
// rope_local_base_freq and rope_scaling gone from the top level): the same model.
TEST(Gemma3Config, RopeParametersPerLayerTypeAreTheSameModel) {
  ScratchDir scratch;
  const std::string dir = synth_f32(scratch, "tiny-gemma3");
  const std::vector<int32_t> ids = {1, 17, 42, 99, 5, 7, 11, 13, 200, 3, 8, 64};
  const std::vector<float> v4 = last_logits(dir, ids);
  const std::string path = dir + "/config.json";
  nlohmann::json c = nlohmann::json::parse(read_file(path));
  ASSERT_EQ(c["rope_scaling"]["rope_type"], "linear");
  c["rope_parameters"] = {
      {"full_attention",
       {{"rope_type", "linear"},
        {"factor", c["rope_scaling"]["factor"]},
        {"rope_theta", c["rope_theta"]}}},
      {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", c["rope_local_base_freq"]}}}};
  for (const char* key : {"rope_scaling", "rope_theta", "rope_local_base_freq"}) c.erase(key);
  write_file(path, c.dump());
  EXPECT_EQ(last_logits(dir, ids), v4);
  // Another sliding base is another model; a scaled sliding rope is refused.
  c["rope_parameters"]["sliding_attention"]["rope_theta"] = 500.0;
  write_file(path, c.dump());
  EXPECT_NE(last_logits(dir, ids), v4);
  c["rope_parameters"]["sliding_attention"]["rope_type"] = "linear";
  write_file(path, c.dump());
  expect_error([&] { (void)Model::load(dir); },
               {"rope_parameters.sliding_attention.rope_type", "unscaled"});
}

// transformers 5 writes Phi-3's rope settings (rope_theta, partial_rotary_factor, the original
// context and the longrope factors) into rope_parameters: the same model, short and long.
TEST(Phi3Config, RopeParametersAreTheSameModel) {
  ScratchDir scratch;
  const std::string dir = synth_f32(scratch, "tiny-phi3");
  std::vector<int32_t> short_ids(20), long_ids(300);  // the switch is at 256
  for (size_t i = 0; i < long_ids.size(); ++i) long_ids[i] = static_cast<int32_t>(1 + i * 7 % 300);
  std::copy_n(long_ids.begin(), short_ids.size(), short_ids.begin());
  const std::vector<float> short_v4 = last_logits(dir, short_ids),
                           long_v4 = last_logits(dir, long_ids);
  const std::string path = dir + "/config.json";
  nlohmann::json c = nlohmann::json::parse(read_file(path));
  nlohmann::json rope = c["rope_scaling"];
  rope["rope_theta"] = c["rope_theta"];
  rope["partial_rotary_factor"] = c["partial_rotary_factor"];
  rope["original_max_position_embeddings"] = c["original_max_position_embeddings"];
  c["rope_parameters"] = rope;
  for (const char* key :
       {"rope_scaling", "rope_theta", "partial_rotary_factor", "original_max_position_embeddings"})
    c.erase(key);
  write_file(path, c.dump());
  EXPECT_EQ(last_logits(dir, short_ids), short_v4);
  EXPECT_EQ(last_logits(dir, long_ids), long_v4);
}

// Both layouts of a Gemma 3 multimodal checkpoint (untied head, so that its name matters):
// transformers before 4.52 (language_model.model., language_model.lm_head, vision_tower.) and
// after (model.language_model., lm_head, model.vision_tower.) predict what the text model
// predicts, bit for bit.
TEST(Gemma3Multimodal, BothTextPrefixesLoadAsTheTextModel) {
  ScratchDir scratch;
  SynthOptions s = synth_preset("tiny-gemma3");
  s.dtype = Dtype::F32;
  s.config.tie_word_embeddings = false;
  s.config.keys.push_back("tie_word_embeddings");  // Gemma ties unless the config says otherwise
  s.output_dir = scratch.file("text");
  write_synthetic_model(s);
  write_multimodal(s.output_dir, scratch.file("older"), "language_model.model.",
                   "language_model.lm_head", "vision_tower.");
  write_multimodal(s.output_dir, scratch.file("newer"), "model.language_model.", "lm_head",
                   "model.vision_tower.");
  EXPECT_EQ(Architecture::read(scratch.file("older")).embedding,
            "language_model.model.embed_tokens.weight");
  EXPECT_EQ(Architecture::read(scratch.file("newer")).head->name, "lm_head");

  const std::vector<int32_t> ids = {5, 17, 200, 3, 91, 44, 310, 8, 12, 77};
  const std::vector<float> want = last_logits(s.output_dir, ids);
  EXPECT_EQ(last_logits(scratch.file("older"), ids), want);
  EXPECT_EQ(last_logits(scratch.file("newer"), ids), want);
}

// Mistral Small 3.x and Ministral 3 ship as Mistral3ForConditionalGeneration: its text model
// (Mistral's or Ministral 3's) under either prefix is the same model as the text checkpoint.
TEST(Mistral3Multimodal, BothTextPrefixesLoadAsTheTextModel) {
  ScratchDir scratch;
  for (const auto& [preset, text_type] :
       {std::pair{"tiny-ministral3", "ministral3"}, {"tiny-mistral", "mistral"}}) {
    SCOPED_TRACE(preset);
    const std::string text = synth_f32(scratch, preset);
    const std::string older = scratch.file(std::string(preset) + "-older");
    const std::string newer = scratch.file(std::string(preset) + "-newer");
    write_multimodal(text, older, "language_model.model.", "language_model.lm_head",
                     "vision_tower.", "Mistral3ForConditionalGeneration", text_type);
    write_multimodal(text, newer, "model.language_model.", "lm_head", "model.vision_tower.",
                     "Mistral3ForConditionalGeneration", text_type);
    EXPECT_EQ(Architecture::read(older).head->name, "language_model.lm_head");
    EXPECT_EQ(Architecture::read(newer).embedding, "model.language_model.embed_tokens.weight");
    // Positions past the original context (16), where Ministral 3 scales its queries.
    std::vector<int32_t> ids;
    for (int32_t i = 0; i < 40; ++i) ids.push_back((i * 37 + 5) % 384);
    const std::vector<float> want = last_logits(text, ids);
    EXPECT_EQ(last_logits(older, ids), want);
    EXPECT_EQ(last_logits(newer, ids), want);
  }
}

}  // namespace
}  // namespace dq4::test
