#pragma once
// The config.json of a multimodal checkpoint (Gemma3ForConditionalGeneration,
// Mistral3ForConditionalGeneration) -> the config of its language model alone; transformers'
// defaults for the keys a text config may leave out.

#include <nlohmann/json.hpp>
#include <string>

namespace dq4::io {

// Whether `config` is a multimodal one whose language model dq4 runs.
bool has_text_model(const nlohmann::json& config);

// Replaces `config` by its text_config object with the architecture kept, the token ids,
// tie_word_embeddings and dtype taken from the top level where text_config lacks them, and the
// text model type's defaults for the fields transformers lets it omit (moved, not copied: values
// may nest deeply). Throws dq4::Error naming `file` when text_config is missing or not an object.
void lift_text_config(nlohmann::json& config, const std::string& file);

// Fills in the defaults of `config`'s model_type (transformers' config class) where it leaves keys
// out; nothing for types dq4 keeps no defaults of.
void add_type_defaults(nlohmann::json& config);

}  // namespace dq4::io
