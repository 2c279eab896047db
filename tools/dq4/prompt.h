#pragma once
// Turning the command line's prompt into token ids: plain text (-p), a chat turn through the
// model's chat template (--chat, --system), or ids given as they are (--prompt-ids).

#include <cstdint>
#include <string>
#include <vector>

#include "args.h"
#include "dq4/tokenizer/tokenizer.h"

namespace dq4::cli {

void declare_prompt_options(Args& args);
// Throws dq4::Error when none or several of -p, --chat, --prompt-ids are given.
std::vector<int32_t> prompt_ids(const Args& args, const Tokenizer& tokenizer);

// The chat template of the model directory rendered for `messages_json` (a JSON array), with
// the generation prompt; its ids as transformers tokenizes a rendered template (no added BOS).
std::vector<int32_t> chat_prompt_ids(const std::string& model_dir, const Tokenizer& tokenizer,
                                     const std::string& messages_json);

}  // namespace dq4::cli
