#include "request_options.h"

#include <algorithm>
#include <cstdint>

#include "dq4/kernels/error.h"

namespace dq4::cli {

void declare_request_options(Args& args) {
  args.option("n-predict", "N", "tokens to generate at most", "256").short_name('n', "n-predict");
  args.option("temp", "T", "temperature; 0 = greedy", "0.8");
  args.option("top-k", "K", "keep the K most likely tokens; 0 = all", "40");
  args.option("top-p", "P", "nucleus sampling threshold", "0.95");
  args.option("min-p", "P", "drop tokens below P x the top probability", "0.05");
  args.option("repeat-penalty", "R", "repetition penalty over prompt and output; 1 = off", "1");
  args.option("presence-penalty", "X", "OpenAI presence penalty", "0");
  args.option("frequency-penalty", "X", "OpenAI frequency penalty", "0");
  args.option("seed", "S", "random seed (same seed, same output); default: random");
  args.option("stop", "TEXT", "stop before this text (repeatable)");
  args.repeatable("stop");
  args.option("stop-token-ids", "IDS", "comma-separated token ids that end the output like EOS");
  args.option("min-tokens", "N", "generate at least N tokens before EOS, stop ids or strings", "0");
  args.option("ignore-eos", "", "do not stop at the model's end-of-sequence tokens");
  args.option("include-stop-str-in-output", "", "keep the stop string that ended the text");
  args.option("no-skip-special-tokens", "", "keep special tokens (e.g. </s>) in the text");
}

namespace {

SamplingParams sampling_params(const Args& args) {
  SamplingParams p;
  p.temperature = static_cast<float>(args.number("temp"));
  p.top_k = static_cast<int>(args.integer("top-k"));
  p.top_p = static_cast<float>(args.number("top-p"));
  p.min_p = static_cast<float>(args.number("min-p"));
  p.repetition_penalty = static_cast<float>(args.number("repeat-penalty"));
  p.presence_penalty = static_cast<float>(args.number("presence-penalty"));
  p.frequency_penalty = static_cast<float>(args.number("frequency-penalty"));
  if (!args.value("seed").empty()) {
    const int64_t seed = args.integer("seed");
    if (seed < 0) throw Error("option --seed: expected a non-negative integer");
    p.seed = static_cast<uint64_t>(seed);
  }
  p.validate();
  return p;
}

}  // namespace

Request request_options(const Args& args) {
  Request r;
  r.sampling = sampling_params(args);
  r.max_tokens = args.integer("n-predict");
  if (*r.max_tokens <= 0) throw Error("option -n/--n-predict: must be positive");
  r.min_tokens = args.integer("min-tokens");
  if (r.min_tokens < 0 || r.min_tokens > *r.max_tokens)
    throw Error("option --min-tokens: must be in [0, -n/--n-predict], got " +
                std::to_string(r.min_tokens));
  r.stop = args.values("stop");
  for (const std::string& stop : r.stop)
    if (stop.empty()) throw Error("option --stop: empty text");
  if (!args.value("stop-token-ids").empty())
    for (int64_t id : args.integers("stop-token-ids")) {
      if (id < 0 || id > INT32_MAX)
        throw Error("option --stop-token-ids: id " + std::to_string(id) + " out of range");
      r.stop_token_ids.push_back(static_cast<TokenId>(id));
    }
  r.ignore_eos = args.flag("ignore-eos");
  r.include_stop_str_in_output = args.flag("include-stop-str-in-output");
  r.skip_special_tokens = !args.flag("no-skip-special-tokens");
  return r;
}

void check_stop_token_ids(const Request& request, const Model& model) {
  for (TokenId id : request.stop_token_ids)
    if (id >= model.vocab_size())
      throw Error("option --stop-token-ids: id " + std::to_string(id) +
                  " is outside the vocabulary of " + std::to_string(model.vocab_size()) +
                  " tokens");
}

EngineOptions offline_engine_options(int64_t ctx, const Model& model, attention::KvType kv_type) {
  EngineOptions o;
  o.max_model_len = std::min(ctx, model.max_context());
  o.block_size = 16;
  o.kv_blocks = (o.max_model_len + o.block_size - 1) / o.block_size;
  o.kv_type = kv_type;
  o.prefault_kv_cache = false;
  o.max_num_seqs = 1;
  o.max_num_batched_tokens = 512;  // the prefill chunk
  o.max_waiting = 1;
  return o;
}

void set_prompt(Request& request, std::vector<TokenId> prompt, int64_t max_model_len) {
  const int64_t length = static_cast<int64_t>(prompt.size());
  if (length > max_model_len)
    throw Error("the prompt has " + std::to_string(length) + " tokens, more than the context of " +
                std::to_string(max_model_len) + " tokens (--ctx)");
  if (length == max_model_len)
    throw Error("the prompt has " + std::to_string(length) +
                " tokens, the whole context (--ctx): no room to generate");
  if (request.max_tokens && length + *request.max_tokens > max_model_len)
    request.max_tokens = std::nullopt;  // up to the end of the context
  request.prompt = std::move(prompt);
}

}  // namespace dq4::cli
