#pragma once
// A Hugging Face tokenizer as llama.cpp's tokenizer.ggml.* metadata, the way convert_hf_to_gguf.py
// writes it.

#include <string>

#include "dq4/io/gguf_writer.h"
#include "dq4/io/model_config.h"

namespace dq4::model {

// Reads model_dir's tokenizer.json (and tokenizer_config.json, the chat template where
// ChatTemplate::find_source finds one) and adds the vocabulary padded to config.vocab_size, its
// token types, merges or scores, the pre-tokenizer name, special token ids and the chat template.
// Throws dq4::Error naming the file and field for a tokenizer llama.cpp has no equivalent of.
void add_gguf_vocab(const std::string& model_dir, const ModelConfig& config, GgufWriter& writer);

}  // namespace dq4::model
