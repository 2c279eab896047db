#pragma once
// The files of a Hugging Face model directory besides the weights: config.json and the
// tokenizer / generation files that travel with it.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace dq4::quant {

// Copies the tokenizer and generation files of `from` that exist (tokenizer.json,
// tokenizer_config.json, special_tokens_map.json, generation_config.json, tokenizer.model, ...)
// into `to`. Returns how many were copied. Throws dq4::Error naming a file that cannot be copied.
int copy_tokenizer_files(const std::string& from, const std::string& to);

// The total size of the regular files directly in `dir`.
uint64_t directory_bytes(const std::string& dir);

// Writes `config` to dir/config.json with a 2-space indent, as transformers does.
void write_config_json(const nlohmann::ordered_json& config, const std::string& dir);

}  // namespace dq4::quant
