#pragma once
// Gemma3ForConditionalGeneration's config.json -> the config of its language model alone.

#include <nlohmann/json.hpp>
#include <string>

namespace dq4::io {

// The text_config object with the architecture kept, the token ids, tie_word_embeddings and
// dtype taken from the top level where text_config lacks them, and Gemma3TextConfig's defaults
// for the fields transformers lets it omit. Throws dq4::Error naming `file` when text_config is
// missing or not an object.
nlohmann::json gemma3_text_config(const nlohmann::json& config, const std::string& file);

}  // namespace dq4::io
