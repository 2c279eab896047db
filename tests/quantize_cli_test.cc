// dq4 quantize and dq4 synth end to end: outputs, reports, default names, refusals and errors.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_runner.h"
#include "fixtures.h"
#include "safetensors_writer.h"

namespace dq4::test {
namespace {

namespace fs = std::filesystem;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot open " << path;
  return nlohmann::json::parse(in);
}

std::string stories() { return shell_quote(fixtures_dir() + "/stories260K-hf"); }

TEST(QuantizeCli, W4A8DefaultsAndReport) {
  ScratchDir scratch;
  const std::string out = scratch.file("out");
  const CliResult r = run_dq4("quantize " + stories() + " -o " + shell_quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");  // no progress bar when stderr is not a terminal
  EXPECT_NE(r.out.find("quantized 35 of 35 linear modules (W4A8, int-quantized, group size 32)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("MB/s read"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("peak RSS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("VmHWM"), std::string::npos) << r.out;
  const nlohmann::json q = read_json(out + "/config.json")["quantization_config"];
  EXPECT_EQ(q["format"], "int-quantized");
  EXPECT_EQ(q["config_groups"]["group_0"]["weights"]["group_size"], 32);
  EXPECT_EQ(q["config_groups"]["group_0"]["input_activations"]["num_bits"], 8);
  EXPECT_EQ(q["ignore"], nlohmann::json({"lm_head"}));
  EXPECT_TRUE(fs::exists(out + "/model.safetensors"));
  EXPECT_TRUE(fs::exists(out + "/tokenizer.json"));
}

TEST(QuantizeCli, W4A16ChannelwisePackedAndIgnoreList) {
  ScratchDir scratch;
  const std::string out = scratch.file("out");
  const CliResult r = run_dq4("quantize " + stories() + " --output=" + shell_quote(out) +
                              " --scheme channelwise --activations none --format pack-quantized"
                              " --ignore 're:.*down_proj,model.layers.0.mlp.up_proj'"
                              " --ignore 're:model\\.layers\\.[1]{1,2}\\.mlp\\.gate_proj'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("quantized 28 of 35 linear modules (W4A16, pack-quantized, channelwise)"),
            std::string::npos)
      << r.out;
  const nlohmann::json q = read_json(out + "/config.json")["quantization_config"];
  EXPECT_EQ(q["format"], "pack-quantized");
  EXPECT_TRUE(q["config_groups"]["group_0"]["input_activations"].is_null());
  EXPECT_EQ(q["config_groups"]["group_0"]["weights"]["strategy"], "channel");
  EXPECT_EQ(q["ignore"], nlohmann::json({"lm_head", "re:.*down_proj", "model.layers.0.mlp.up_proj",
                                         "re:model\\.layers\\.[1]{1,2}\\.mlp\\.gate_proj"}));
}

TEST(QuantizeCli, DefaultOutputNameAndRefusalToOverwrite) {
  ScratchDir scratch;
  const std::string in_scratch = "cd " + shell_quote(scratch.path()) + " &&";
  CliResult r = run_dq4("quantize " + stories() + "/", "", in_scratch);  // a trailing slash too
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(scratch.file("stories260K-hf-w4a8-groupwise/model.safetensors")));
  r = run_dq4("quantize " + stories() + " --scheme channelwise --activations none", "", in_scratch);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(scratch.file("stories260K-hf-w4a16-channelwise/config.json")));

  r = run_dq4("quantize " + stories(), "", in_scratch);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("stories260K-hf-w4a8-groupwise already exists (pass --force to replace it)"),
            std::string::npos)
      << r.err;
  r = run_dq4("quantize " + stories() + " --force", "", in_scratch);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> entries;  // no staging or replaced directory left behind
  for (const auto& e : fs::directory_iterator(scratch.path()))
    entries.push_back(e.path().filename().string());
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(entries, (std::vector<std::string>{"stories260K-hf-w4a16-channelwise",
                                               "stories260K-hf-w4a8-groupwise"}));
}

TEST(QuantizeCli, StaleStagingFolderIsRemovedAndNamed) {
  ScratchDir scratch;
  const std::string out = scratch.file("out");
  const pid_t gone = ::fork();  // a process killed mid-run: its pid no longer exists
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  const std::string stale = out + ".tmp-" + std::to_string(gone);
  const std::string live = out + ".tmp-" + std::to_string(::getpid());  // this test is running
  fs::create_directory(stale);
  fs::create_directory(live);
  write_file(stale + "/model.safetensors", "partial");
  const CliResult r = run_dq4("quantize " + stories() + " -o " + shell_quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "removed stale staging folder " + stale + " left by process " +
                       std::to_string(gone) + "\n");
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::is_directory(live));
}

TEST(QuantizeCli, ShardedOutput) {
  ScratchDir scratch;
  const std::string out = scratch.file("out");
  const CliResult r =
      run_dq4("quantize " + stories() + " -o " + shell_quote(out) + " --max-shard-size 200KB");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json index = read_json(out + "/model.safetensors.index.json");
  uint64_t files_data = 0;
  for (const auto& entry : fs::directory_iterator(out))
    if (entry.path().extension() == ".safetensors") {
      EXPECT_EQ(entry.path().filename().string().find("model-0000"), 0u);
      std::ifstream in(entry.path(), std::ios::binary);
      uint64_t header = 0;
      in.read(reinterpret_cast<char*>(&header), 8);
      files_data += fs::file_size(entry.path()) - 8 - header;
    }
  EXPECT_EQ(index["metadata"]["total_size"].get<uint64_t>(), files_data);
  EXPECT_EQ(index["weight_map"].size(), 47u + 35u);  // weight -> weight + weight_scale
  EXPECT_NE(r.out.find(" files,"), std::string::npos) << r.out;
}

TEST(QuantizeCli, Errors) {
  ScratchDir scratch;
  const std::string out = " -o " + shell_quote(scratch.file("out"));
  const struct {
    std::string args, message;
  } cases[] = {
      {"quantize" + out, "missing argument IN_DIR"},
      {"quantize " + stories() + " " + stories() + out, "unexpected argument"},
      {"quantize " + stories() + out + " --scheme rowwise",
       "--scheme must be channelwise or groupwise"},
      {"quantize " + stories() + out + " --group-size 0", "--group-size must be positive"},
      {"quantize " + stories() + out + " --activations int4", "--activations must be int8 or none"},
      {"quantize " + stories() + out + " --format gguf", "--format must be int-quantized"},
      {"quantize " + stories() + out + " --max-shard-size 5XB", "--max-shard-size needs a size"},
      {"quantize " + stories() + out + " --ignore 're:(unclosed'", "bad regex"},
      {"quantize " + stories() + out + " --bogus", "unknown option --bogus"},
      {"quantize " + shell_quote(scratch.path()) + out, scratch.path() + "/config.json"},
      {"quantize " + shell_quote(fixtures_dir() + "/stories260K-hf-w4a16-ct") + out,
       "already has a quantization_config"},
  };
  for (const auto& c : cases) {
    const CliResult r = run_dq4(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.args;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << ": " << r.err;
  }
  EXPECT_FALSE(fs::exists(scratch.file("out")));
}

TEST(QuantizeCli, UnsupportedDtypeAndMissingTensor) {
  ScratchDir scratch;
  const std::string model = scratch.file("model");
  fs::create_directory(model);
  fs::copy_file(fixtures_dir() + "/stories260K-hf/config.json", model + "/config.json");
  // A tensor of the last of the config's 5 layers, so that the checkpoint holds as many layers.
  const TestTensor last_layer{
      "model.layers.4.input_layernorm.weight", "F32", {64}, std::vector<uint8_t>(64 * 4)};
  write_safetensors(model + "/model.safetensors", {{"model.layers.0.self_attn.q_proj.weight",
                                                    "F64",
                                                    {64, 64},
                                                    std::vector<uint8_t>(64 * 64 * 8)},
                                                   last_layer});
  CliResult r = run_dq4("quantize " + shell_quote(model) + " -o " + shell_quote(scratch.file("o")));
  EXPECT_EQ(r.exit_code, 1);
  // Modules are checked in forward order: q_proj of layer 0 first (F64), then the rest (missing).
  EXPECT_NE(r.err.find("\"model.layers.0.self_attn.q_proj.weight\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("is F64; only F32, BF16 and F16"), std::string::npos) << r.err;
  write_safetensors(model + "/model.safetensors", {last_layer});
  r = run_dq4("quantize " + shell_quote(model) + " -o " + shell_quote(scratch.file("o")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("has no tensor \"model.layers.0.self_attn.q_proj.weight\""),
            std::string::npos)
      << r.err;
  // Fewer layers than the config counts: refused naming the field before any layer is read.
  write_safetensors(model + "/model.safetensors", {});
  r = run_dq4("quantize " + shell_quote(model) + " -o " + shell_quote(scratch.file("o")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("config.json: num_hidden_layers: 5 layers"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(scratch.file("o")));
}

TEST(SynthCli, ShardedModelQuantizes) {
  ScratchDir scratch;
  const std::string model = scratch.file("m");
  CliResult r = run_dq4("synth -o " + shell_quote(model) +
                        " --preset tiny --dtype f16 --layers 3 --max-shard-size 64KB --seed 5"
                        " --tokenizer " +
                        shell_quote(fixtures_dir() + "/stories260K-hf"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("files"), std::string::npos) << r.out;
  const nlohmann::json config = read_json(model + "/config.json");
  EXPECT_EQ(config["num_hidden_layers"], 3);
  EXPECT_EQ(config["torch_dtype"], "float16");
  EXPECT_EQ(config["architectures"], nlohmann::json({"LlamaForCausalLM"}));
  EXPECT_TRUE(fs::exists(model + "/model.safetensors.index.json"));
  EXPECT_TRUE(fs::exists(model + "/tokenizer.json"));

  r = run_dq4("quantize " + shell_quote(model) + " -o " + shell_quote(scratch.file("q")) +
              " --format pack-quantized");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("quantized 21 of 22 linear modules"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(scratch.file("q/tokenizer.json")));
}

// With --tokenizer the vocabulary is the tokenizer's (largest id + 1; a multiple of 128 for
// Qwen): a real Qwen3 tokenizer's chat prompt, ids up to 151,668, runs on the model written.
// A --vocab smaller than the tokenizer is refused.
TEST(SynthCli, TokenizerSizesTheVocabulary) {
  ScratchDir scratch;
  const std::string model = scratch.file("m");
  const std::string qwen3 = shell_quote(fixtures_dir() + "/tokenizer-qwen3");
  CliResult r = run_dq4("synth -o " + shell_quote(model) + " --preset tiny-qwen3 --tokenizer " +
                        qwen3 + " --layers 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_json(model + "/config.json")["vocab_size"], 151680);
  r = run_dq4("generate -m " + shell_quote(model) +
              " --prompt '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n' -n 2 --temp 0"
              " --threads 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;

  r = run_dq4("synth -o " + shell_quote(scratch.file("small")) +
              " --preset tiny-qwen3 --vocab 1000 --tokenizer " + qwen3);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("vocab_size 1000 is smaller than the tokenizer"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("give at least 151669"), std::string::npos) << r.err;
}

TEST(SynthCli, HelpAndErrors) {
  for (const char* command : {"quantize --help", "synth --help"}) {
    const CliResult r = run_dq4(command);
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.err;
    EXPECT_NE(r.out.find("usage: dq4"), std::string::npos) << command << ": " << r.out;
  }
  EXPECT_NE(run_dq4("--help").out.find("quantize"), std::string::npos);
  ScratchDir scratch;
  const std::string out = " -o " + shell_quote(scratch.file("m"));
  const struct {
    std::string args, message;
  } cases[] = {
      {"synth", "missing option --output"},
      {"synth" + out + " --preset llama-70b", "unknown preset 'llama-70b'"},
      {"synth" + out + " --dtype f64", "--dtype must be bf16, f16 or f32"},
      {"synth" + out + " --layers 0", "--layers must be positive"},
      {"synth" + out + " --heads 5", "num_key_value_heads 2 does not divide num_attention_heads 5"},
      {"synth" + out + " --tie-embeddings maybe", "--tie-embeddings must be true or false"},
  };
  for (const auto& c : cases) {
    const CliResult r = run_dq4(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.args;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << ": " << r.err;
  }
}

}  // namespace
}  // namespace dq4::test
