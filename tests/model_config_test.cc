// config.json -> ModelConfig: fields as the file says them.

#include "dq4/io/model_config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "expect_error.h"
#include "fixtures.h"
#include "safetensors_writer.h"

namespace dq4::test {
namespace {

TEST(ModelConfig, Stories260KFixture) {
  const ModelConfig c = ModelConfig::read(fixtures_dir() + "/stories260K-hf");
  EXPECT_EQ(c.architecture, "LlamaForCausalLM");
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.intermediate_size, 172);
  EXPECT_EQ(c.num_hidden_layers, 5);
  EXPECT_EQ(c.num_attention_heads, 8);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.torch_dtype, "float32");
  EXPECT_EQ(c.eos_token_ids, std::vector<int32_t>{2});
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_TRUE(c.rope_scaling.type.empty());
}

nlohmann::json small_config() {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"hidden_size", 64},
          {"intermediate_size", 128},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"vocab_size", 100}};
}

TEST(ModelConfig, Defaults) {
  const ModelConfig c = ModelConfig::parse(small_config().dump(), "config.json");
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_EQ(c.hidden_act, "silu");
}

TEST(ModelConfig, RopeWindowAndTokenIds) {
  nlohmann::json j = small_config();
  j["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 32.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  j["eos_token_id"] = {128001, 128008, 128009};
  j["sliding_window"] = 4096;
  ModelConfig c = ModelConfig::parse(j.dump(), "config.json");
  EXPECT_EQ(c.rope_scaling.type, "llama3");
  EXPECT_EQ(c.rope_scaling.factor, 32.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{128001, 128008, 128009}));
  EXPECT_EQ(c.sliding_window, 4096);
  // Qwen's sliding_window applies only with use_sliding_window.
  j["use_sliding_window"] = false;
  EXPECT_EQ(ModelConfig::parse(j.dump(), "config.json").sliding_window, 0);
  // transformers 5: rope_parameters holds rope_theta too.
  j = small_config();
  j["rope_parameters"] = {{"rope_type", "linear"}, {"factor", 2.0}, {"rope_theta", 1e6}};
  c = ModelConfig::parse(j.dump(), "config.json");
  EXPECT_EQ(c.rope_scaling.type, "linear");
  EXPECT_EQ(c.rope_theta, 1e6);
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1e4}};
  EXPECT_TRUE(ModelConfig::parse(j.dump(), "config.json").rope_scaling.type.empty());
}

TEST(ModelConfig, WholeFloatsAreIntegers) {
  nlohmann::json j = small_config();
  j["hidden_size"] = 64.0;  // some Python exporters write integers as floats
  EXPECT_EQ(ModelConfig::parse(j.dump(), "config.json").hidden_size, 64);
}

TEST(ModelConfig, ErrorsNameTheField) {
  struct Case {
    const char* key;
    nlohmann::json value;
    const char* fragment;
  };
  const Case cases[] = {
      {"rope_scaling", {{"factor", 2.0}}, "rope_scaling.rope_type: missing"},
      {"eos_token_id", "</s>", "eos_token_id: expected a token id"},
      {"architectures", "LlamaForCausalLM", "architectures"},
      {"hidden_size", nullptr, "hidden_size: missing"},
      {"hidden_size", "64", "hidden_size: expected an integer"},
      {"hidden_size", 64.5, "hidden_size: expected an integer"},
      // Found by the quant_config fuzzer: converting 6.7e98 to an integer was undefined.
      {"hidden_size", 6.66667e98, "hidden_size: expected an integer"},
      {"hidden_size", 18446744073709551615ull, "hidden_size: expected an integer"},
      {"num_attention_heads", 0, "num_attention_heads: must be positive"},
      {"num_key_value_heads", 3, "does not divide"},
      {"rms_norm_eps", -1.0, "rms_norm_eps"},
      {"tie_word_embeddings", "yes", "tie_word_embeddings: expected true or false"},
      // f32 frequencies from a base f32 cannot hold would make every rotation NaN.
      {"rope_theta", 1e-300, "rope_theta: must be a positive number in float's range"},
      {"rope_theta", 1e39, "rope_theta: must be a positive number in float's range"},
      {"rope_local_base_freq", 1e-300, "rope_local_base_freq: must be a positive number"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.key);
    nlohmann::json j = small_config();
    j[c.key] = c.value;
    expect_error([&] { ModelConfig::parse(j.dump(), "dir/config.json"); },
                 {"dir/config.json", c.fragment});
  }
}

// A config whose field `key` holds `value_text` (JSON text, spliced in: a value nested 100,000
// deep cannot be built as a JSON value without recursing as deep).
std::string config_with(const std::string& key, const std::string& value_text) {
  nlohmann::json j = small_config();
  j[key] = "@VALUE@";
  std::string text = j.dump();
  text.replace(text.find("\"@VALUE@\""), 9, value_text);
  return text;
}

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// A wrongly typed value is quoted in the error as a short prefix, however deep it nests (the
// whole value, dumped recursively, overflowed the stack); JSON that deep but unterminated is a
// parse error.
TEST(ModelConfig, DeeplyNestedValuesGiveShortErrors) {
  for (const char* key : {"vocab_size", "eos_token_id", "rope_scaling", "tie_word_embeddings"}) {
    SCOPED_TRACE(key);
    try {
      ModelConfig::parse(config_with(key, nested(100000)), "dir/config.json");
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(std::string("dir/config.json: ") + key), std::string::npos) << message;
      EXPECT_NE(message.find("[[[[[[[[[[[[[[[[[[[["), std::string::npos) << message;
      EXPECT_LT(message.size(), 200u) << message;
    }
  }
  expect_error(
      [&] { ModelConfig::parse(config_with("vocab_size", std::string(100000, '[')), "c.json"); },
      {"c.json: not valid JSON"});

  ScratchDir dir;
  write_file(dir.file("generation_config.json"), "{\"eos_token_id\": " + nested(100000) + "}");
  expect_error([&] { read_generation_eos_ids(dir.path()); },
               {"generation_config.json: eos_token_id: expected a token id", "[[[[[[["});
}

}  // namespace
}  // namespace dq4::test
