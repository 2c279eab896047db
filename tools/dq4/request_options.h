#pragma once
// What `dq4 generate` and `dq4 chat` ask of each request (sampling, stopping, detokenizing; the
// options named as vLLM names the request's fields), and the engine they run it on.

#include <cstdint>
#include <vector>

#include "args.h"
#include "dq4/engine/engine.h"
#include "dq4/model/model.h"

namespace dq4::cli {

// -n, --temp, --top-k, --top-p, --min-p, the penalties, --seed, --stop (repeatable),
// --stop-token-ids, --min-tokens, --ignore-eos, --include-stop-str-in-output,
// --no-skip-special-tokens.
void declare_request_options(Args& args);
// The request those options describe, without its prompt. Throws dq4::Error naming the option
// for a bad value.
Request request_options(const Args& args);
// Throws dq4::Error naming --stop-token-ids for an id outside `model`'s vocabulary.
void check_stop_token_ids(const Request& request, const Model& model);

// An engine for one conversation: a KV cache of `ctx` (> 0) tokens, at most the model's
// context.
EngineOptions offline_engine_options(int64_t ctx, const Model& model, attention::KvType kv_type);

// Gives `request` its prompt. -n beyond the room the context leaves is cut to it (the request
// finishes with "length"). Throws dq4::Error when the prompt leaves no room at all.
void set_prompt(Request& request, std::vector<TokenId> prompt, int64_t max_model_len);

}  // namespace dq4::cli
