#pragma once
// The tokenizer files of a synthetic model (`dq4 synth`): a byte-level BPE in Hugging Face's
// tokenizer.json format, so that every preset can be tokenized, chatted with and exported without
// a download. Its vocabulary: the 256 byte tokens, merges learnt from a small built-in English text
// (deterministic), filler tokens, and the family's special tokens at the top, exactly vocab_size
// ids in all.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dq4::quant {

enum class TokenizerStyle {
  llama3,  // Llama 3's pre-tokenizer regex, <|begin_of_text|> BOS, Llama 3 chat template
  qwen,    // Qwen2's regex and NFC, no BOS, ChatML
};

struct SynthTokenizer {
  nlohmann::ordered_json tokenizer;         // tokenizer.json
  nlohmann::ordered_json tokenizer_config;  // tokenizer_config.json
  int32_t bos_id = -1;                      // -1: no BOS (Qwen)
  std::vector<int32_t> eos_ids;             // what ends generation, first = eos_token
};

// Throws dq4::Error when vocab_size cannot hold the byte tokens and the special tokens.
SynthTokenizer make_synthetic_tokenizer(int64_t vocab_size, TokenizerStyle style);

// Writes tokenizer.json and tokenizer_config.json into `dir`.
void write_synthetic_tokenizer(const SynthTokenizer& t, const std::string& dir);

}  // namespace dq4::quant
