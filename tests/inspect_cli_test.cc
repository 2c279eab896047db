// dq4 inspect end to end: the fixtures (unquantized and W4A16), JSON output, and a module the
// config refuses.

#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_runner.h"
#include "fixtures.h"
#include "safetensors_writer.h"

namespace dq4::test {
namespace {

TEST(InspectCli, W4A16FixtureTable) {
  const std::string dir = fixtures_dir() + "/stories260K-hf-w4a16-ct";
  const CliResult r = run_dq4("inspect " + shell_quote(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("LlamaForCausalLM"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lm_head tied to the embeddings"), std::string::npos);
  EXPECT_NE(r.out.find("group_0 -> [Linear]: W4A16 pack-quantized channel"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("model.layers.0.mlp.down_proj"), std::string::npos);
  EXPECT_NE(r.out.find("bytes/param"), std::string::npos);
}

TEST(InspectCli, JsonCountsBytesPerParameter) {
  const std::string dir = fixtures_dir() + "/stories260K-hf-w4a16-ct";
  const CliResult r = run_dq4("inspect --json " + shell_quote(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["modules"].size(), 35u);
  const nlohmann::json& down = j["modules"][6];
  EXPECT_EQ(down["name"], "model.layers.0.mlp.down_proj");
  EXPECT_EQ(down["scheme"], "W4A16");
  EXPECT_EQ(down["format"], "pack-quantized");
  EXPECT_EQ(down["group_size"], 0);
  // 64 rows x 22 int32 words + 64 f32 scales (weight_shape is not counted as weights).
  EXPECT_EQ(down["bytes"], 64 * 22 * 4 + 64 * 4);
  EXPECT_EQ(j["linear_params"], 5 * (64 * 64 + 2 * 32 * 64 + 64 * 64 + 3 * 64 * 172));
  EXPECT_LT(j["linear_bytes_per_param"].get<double>(), 0.7);
}

TEST(InspectCli, UnquantizedFixtureIsDense) {
  const CliResult r = run_dq4("inspect --json " + shell_quote(fixtures_dir() + "/stories260K-hf"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["quantized"].get<bool>());
  EXPECT_EQ(j["modules"][0]["scheme"], "dense");
  EXPECT_EQ(j["modules"][0]["weight_dtype"], "F32");
  EXPECT_DOUBLE_EQ(j["bytes_per_param"].get<double>(), 4.0);
  EXPECT_EQ(j["context_length"], 512);
  EXPECT_EQ(j["rope"], "default");
}

// yarn's context is the original one times the factor.
TEST(InspectCli, YarnContext) {
  ScratchDir dir;
  const std::string fixture = fixtures_dir() + "/stories260K-hf";
  std::filesystem::create_symlink(fixture + "/model.safetensors", dir.file("model.safetensors"));
  std::ifstream in(fixture + "/config.json");
  nlohmann::json config = nlohmann::json::parse(in);
  config["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  write_file(dir.file("config.json"), config.dump());
  const CliResult r = run_dq4("inspect " + shell_quote(dir.path()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("context 2048 tokens, rope yarn, factor 4 over 512"), std::string::npos)
      << r.out;
}

TEST(InspectCli, RefusedSchemeNamesModuleAndFieldAndFails) {
  ScratchDir dir;
  const std::string fixture = fixtures_dir() + "/stories260K-hf-w4a16-ct";
  std::filesystem::create_symlink(fixture + "/model.safetensors", dir.file("model.safetensors"));
  std::ifstream in(fixture + "/config.json");
  nlohmann::json config = nlohmann::json::parse(in);
  config["quantization_config"]["config_groups"]["group_0"]["weights"]["symmetric"] = false;
  std::ofstream(dir.file("config.json")) << config.dump();
  const CliResult r = run_dq4("inspect " + shell_quote(dir.path()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("UNSUPPORTED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("model.layers.0.self_attn.q_proj"), std::string::npos);
  EXPECT_NE(r.out.find("weights.symmetric"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("cannot be loaded"), std::string::npos) << r.err;
}

TEST(InspectCli, LoadFusesAndHonoursTheLoadOptions) {
  const std::string dir = shell_quote(fixtures_dir() + "/stories260K-hf-w4a16-ct");
  CliResult r = run_dq4("inspect --load " + dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("W4A16 channel"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("model.layers.0.self_attn.q_proj+model.layers.0.self_attn.k_proj+"
                       "model.layers.0.self_attn.v_proj"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("dense F32"), std::string::npos) << r.out;  // the tied head
  EXPECT_EQ(r.out.find("W4A8"), std::string::npos) << r.out;

  r = run_dq4("inspect --load --activations int8 --quantize-dense w4a8-g32 " + dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("W4A16 channel"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("W4A8 channel"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("W4A8 g32"), std::string::npos) << r.out;  // the head, quantized at load

  r = run_dq4("inspect --load --quantize-dense w4a8-g48 " + dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--quantize-dense"), std::string::npos) << r.err;
  r = run_dq4("inspect --load --activations fp8 " + dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--activations"), std::string::npos) << r.err;
}

// A mixture's expert modules have names longer than the usual column: the column widens, so the
// shapes stay aligned under their header.
TEST(InspectCli, LongModuleNamesKeepTheColumnsAligned) {
  ScratchDir scratch;
  const std::string dir = scratch.file("glm");
  ASSERT_EQ(run_dq4("synth --preset tiny-glm4-moe -o " + shell_quote(dir)).exit_code, 0);
  const CliResult r = run_dq4("inspect " + shell_quote(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  size_t shape_end = std::string::npos, rows = 0;
  while (std::getline(lines, line)) {
    if (line.starts_with("linear module ")) shape_end = line.find("N x K") + 5;
    if (!line.starts_with("model.layers.")) continue;
    ++rows;
    ASSERT_NE(shape_end, std::string::npos) << r.out;
    ASSERT_GT(line.size(), shape_end) << line;
    EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(line[shape_end - 1])) &&
                line[shape_end] == ' ')
        << line;
  }
  EXPECT_GT(rows, 40u) << r.out;
}

TEST(InspectCli, MissingDirectoryAndArgument) {
  CliResult r = run_dq4("inspect /nonexistent-dq4-model");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent-dq4-model/config.json"), std::string::npos) << r.err;
  r = run_dq4("inspect");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("missing argument DIR"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace dq4::test
