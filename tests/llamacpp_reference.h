#pragma once
// llama.cpp as the reference of the model differential tests: node-llama-cpp's prebuilt CPU
// library run by tests/js/llamacpp_reference.mjs on a GGUF, greedy generation on given token ids
// with its most probable next tokens before each generated one; and the prompts both sides run.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dq4::test {

struct Prompt {
  std::vector<int32_t> ids;
  int64_t n = 0;  // tokens to generate
};

struct Generation {
  std::vector<int32_t> ids;
  std::vector<std::vector<float>> probabilities;             // dq4: the full distribution per step
  std::vector<std::vector<std::pair<int32_t, double>>> top;  // llama.cpp: its most probable
};

// Pseudo-random prompt ids in [0, vocab) (fixed: the tests are deterministic).
std::vector<int32_t> prompt_ids(int64_t count, int64_t vocab, uint32_t seed);

std::vector<float> softmax(const float* logits, int64_t n);

// llama.cpp on each prompt's ids (no BOS added), greedy, all prompts in one node process, one
// thread; each generation's `top` has its 8 most probable tokens per step. Adds a test failure
// and returns nothing when node or node-llama-cpp is missing or the run fails.
// A synthetic preset's name as a test name ("tiny-qwen3" -> "tiny_qwen3").
std::string preset_test_name(const testing::TestParamInfo<const char*>& info);

std::vector<Generation> run_llamacpp(const std::string& gguf, const std::vector<Prompt>& prompts);

}  // namespace dq4::test
