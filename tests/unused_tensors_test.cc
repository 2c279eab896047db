// The tensors a model does not use: none in any synthetic architecture, stored, exported or
// quantized (the loader reads every tensor it should), and each one named where a checkpoint
// holds more, by the load and by a GGUF export.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dq4/convert/gguf_export.h"
#include "dq4/convert/quantize.h"
#include "dq4/convert/synth.h"
#include "dq4/io/checkpoint.h"
#include "dq4/model/architecture.h"
#include "dq4/model/model.h"
#include "safetensors_writer.h"
#include "synth_model.h"

namespace dq4::test {
namespace {

std::vector<std::string> unused_after_load(const std::string& dir) {
  return Model::load(dir)->load_report().unused_tensors;
}

std::vector<std::string> unused_after_export(const std::string& dir, const std::string& gguf) {
  GgufExportOptions e;
  e.model_dir = dir;
  e.output = gguf;
  return export_gguf(e).unused_tensors;
}

TEST(UnusedTensors, NoneInAnyTinyPresetStoredExportedOrQuantized) {
  ScratchDir scratch;
  for (const std::string& name : synth_preset_names()) {
    if (!name.starts_with("tiny")) continue;
    SCOPED_TRACE(name);
    const std::string dir = synth_f32(scratch, name);
    EXPECT_EQ(unused_after_load(dir), std::vector<std::string>());
    EXPECT_EQ(unused_after_export(dir, scratch.file(name + ".gguf")), std::vector<std::string>());
    QuantizeOptions q;
    q.input_dir = dir;
    q.modules = Architecture::read(dir).linear_modules();
    q.output_dir = scratch.file(name + "-w4a8");
    q.format = WeightFormat::pack_quantized;
    quantize_checkpoint(q);
    EXPECT_EQ(unused_after_load(q.output_dir), std::vector<std::string>());
  }
}

// A Llama checkpoint holding tensors its architecture does not run (a Gemma-style norm after the
// MLP, a vision tower's) and a precomputed rotary table: the model runs without them, and the
// report names each but the rotary table, which the model computes itself.
TEST(UnusedTensors, TensorsTheArchitectureDoesNotRunAreNamed) {
  ScratchDir scratch;
  const std::string dir = synth_f32(scratch, "tiny");
  const int64_t hidden = synth_preset("tiny").config.hidden_size;
  const std::vector<std::string> unused = {"model.layers.0.post_feedforward_layernorm.weight",
                                           "vision_tower.patch_embedding.weight"};
  std::vector<TestTensor> tensors;
  for (const std::string& name : unused)
    tensors.push_back({name, "F32", {hidden}, std::vector<uint8_t>(hidden * 4, 0)});
  tensors.push_back(
      {"model.layers.1.self_attn.rotary_emb.inv_freq", "F32", {4}, std::vector<uint8_t>(16, 0)});
  write_safetensors(dir + "/extra.safetensors", tensors);
  // The synthetic model's one file, and the new one, through an index.
  nlohmann::json map;
  for (const std::string& name : Checkpoint::open_dir(dir).names()) map[name] = "model.safetensors";
  for (const TestTensor& t : tensors) map[t.name] = "extra.safetensors";
  write_file(dir + "/model.safetensors.index.json",
             nlohmann::json{{"metadata", nlohmann::json::object()}, {"weight_map", map}}.dump());
  EXPECT_EQ(unused_after_load(dir), unused);
  // A GGUF export leaves the same tensors out and says so.
  EXPECT_EQ(unused_after_export(dir, scratch.file("tiny.gguf")), unused);
}

}  // namespace
}  // namespace dq4::test
