// dq4 generate: one prompt in, text streamed out, then the speeds.

#include <cstdio>
#include <nlohmann/json.hpp>

#include "args.h"
#include "commands.h"
#include "constraint_options.h"
#include "dq4/engine/offline_engine.h"
#include "dq4/kernels/error.h"
#include "model_options.h"
#include "progress.h"
#include "prompt.h"
#include "request_options.h"

namespace dq4::cli {
namespace {

double per_second(int64_t count, double seconds) { return seconds > 0 ? count / seconds : 0.0; }

nlohmann::json logprobs_json(const std::vector<TokenLogprobs>& logprobs) {
  nlohmann::json out = nlohmann::json::array();
  for (const TokenLogprobs& t : logprobs) {
    nlohmann::json top = nlohmann::json::array();
    for (const TokenLogprob& k : t.top) top.push_back({{"id", k.token}, {"logprob", k.logprob}});
    out.push_back({{"id", t.chosen.token}, {"logprob", t.chosen.logprob}, {"top", top}});
  }
  return out;
}

}  // namespace

int run_generate(int argc, char** argv, int first) {
  Args args("generate",
            "Generates text from a prompt with a model directory (Hugging Face or\n"
            "compressed-tensors), streaming it to stdout, then prints prompt and decode speed,\n"
            "time to first token, load time and peak memory on stderr (--json: one object).\n"
            "--json-schema, --regex, --grammar or --choice constrain the output: tokens that\n"
            "cannot continue a match are never sampled, and the output ends (finish: stop) as\n"
            "soon as nothing but its end may follow.");
  declare_model_options(args);
  declare_prompt_options(args);
  declare_request_options(args);
  declare_constraint_options(args);
  args.option("logprobs", "N", "with --json: each token's logprob and the N most likely (0-20)");
  args.option("ctx", "N", "context size in tokens (prompt + output)", "4096");
  args.option("json", "", "print one JSON object (ids, text, speeds) instead of streaming");
  args.option("speculative", "METHOD",
              "speculative decoding: ngram (prompt lookup; ngram:min=N,max=M sets the n-gram "
              "sizes, default 2 to 4) or DIR (a draft model: a smaller model with the same "
              "tokenizer); the output is the same, in fewer steps");
  args.option("draft-model", "DIR", "the same as --speculative DIR");
  args.option("num-speculative-tokens", "K", "with --speculative: drafts per step at most", "4");
  if (!args.parse(argc, argv, first)) return 0;
  if (args.given("speculative") && args.given("draft-model"))
    throw Error("options --speculative and --draft-model: give one of them");
  std::optional<SpeculativeConfig> speculative;
  if (args.given("speculative") || args.given("draft-model")) {
    const bool draft = args.given("draft-model");
    const std::string method =
        draft ? "draft:" + args.value("draft-model") : args.value("speculative");
    try {
      speculative = parse_speculate_spec(method);
    } catch (const Error& e) {
      throw Error(std::string(draft ? "option --draft-model: " : "option --speculative: ") +
                  e.what());
    }
    if (speculative->method == SpeculativeConfig::Method::replay)
      throw Error("option --speculative: replay is for benchmarks (ngram or a model directory)");
    speculative->num_speculative_tokens = args.integer("num-speculative-tokens");
    try {
      speculative->validate();
    } catch (const Error& e) {
      throw Error(std::string("option --num-speculative-tokens: ") + e.what());
    }
  }
  const bool json = args.flag("json");
  std::optional<int> logprobs;
  if (!args.value("logprobs").empty()) {
    if (!json) throw Error("option --logprobs: needs --json");
    const int64_t k = args.integer("logprobs");
    if (k < 0 || k > 20) throw Error("option --logprobs: must be in [0, 20]");
    logprobs = static_cast<int>(k);
  }
  Request request = request_options(args);
  request.logprobs = logprobs;
  const std::optional<constrain::ConstraintSpec> constraint = constraint_spec(args);
  const int64_t ctx = args.integer("ctx");
  if (ctx <= 0) throw Error("option --ctx: must be positive");

  LoadedModel loaded = load_model(args, /*need_tokenizer=*/true, /*quiet=*/json);
  const Model& model = *loaded.model;
  check_stop_token_ids(request, model);
  if (constraint) {
    constrain::Compiler compiler(*loaded.tokenizer, model.vocab_size(), model.eos_ids(), 0);
    try {
      request.constraint = compiler.compile(*constraint);
    } catch (const constrain::ConstraintError& e) {
      throw Error(constraint_source(args, *constraint) + ": " + e.what());
    }
  }
  std::vector<TokenId> prompt = prompt_ids(args, *loaded.tokenizer);
  if (prompt.empty()) throw Error("the prompt is empty");
  if (speculative) load_draft(*speculative, loaded, args);
  EngineOptions engine_options = offline_engine_options(ctx, model, kv_type_option(args));
  engine_options.speculative = speculative;
  OfflineEngine engine(*loaded.model, *loaded.tokenizer, engine_options, &loaded.threads());
  set_prompt(request, std::move(prompt), engine.options().max_model_len);
  const auto stream = [](const ChoiceDelta& d) {
    std::fwrite(d.text.data(), 1, d.text.size(), stdout);
    std::fflush(stdout);
  };
  const GenerationOutput r =
      engine.generate(std::move(request), json ? OfflineEngine::DeltaCallback() : stream);
  // The token that ended the output (EOS, --stop-token-ids) is reported as the stop reason, not
  // among the generated ids.
  std::vector<TokenId> generated = r.token_ids;
  if (r.stop_token) generated.pop_back();
  const int64_t prompt_computed =
      static_cast<int64_t>(r.prompt_ids.size()) - r.cached_prompt_tokens;
  const double prompt_tps = per_second(prompt_computed, r.prompt_seconds);
  const int64_t decoded = r.token_ids.empty() ? 0 : static_cast<int64_t>(r.token_ids.size()) - 1;
  const double decode_tps = per_second(decoded, r.decode_seconds);
  const double peak_mb = static_cast<double>(peak_rss_bytes()) / 1e6;
  const char* finish = to_string(r.finish_reason);
  if (json) {
    nlohmann::json stop_reason = nullptr;
    if (r.stop_string) stop_reason = *r.stop_string;
    if (r.stop_token) stop_reason = *r.stop_token;
    nlohmann::json out = {{"prompt_ids", r.prompt_ids},
                          {"generated_ids", generated},
                          {"text", r.text},
                          {"finish_reason", finish},
                          {"stop_reason", stop_reason},
                          {"prompt_tokens", r.prompt_ids.size()},
                          {"completion_tokens", generated.size()},
                          {"prompt_tokens_per_s", prompt_tps},
                          {"decode_tokens_per_s", decode_tps},
                          {"ttft_ms", r.prompt_seconds * 1e3},
                          {"load_s", model.load_report().seconds},
                          {"peak_rss_mb", peak_mb}};
    if (logprobs) out["logprobs"] = logprobs_json(r.logprobs);
    if (speculative) {
      const SpeculationStats s = engine.stats().speculation;
      out["speculation"] = {
          {"method", speculative->name()},
          {"drafts", s.drafts},
          {"draft_tokens", s.draft_tokens},
          {"accepted_tokens", s.accepted_tokens},
          {"acceptance_rate", s.draft_tokens == 0 ? 0.0
                                                  : static_cast<double>(s.accepted_tokens) /
                                                        static_cast<double>(s.draft_tokens)}};
    }
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::printf("\n");
  std::fprintf(stderr,
               "\nprompt: %zu tokens, %.1f tokens/s | decode: %zu tokens, %.1f tokens/s | time to "
               "first token %.1f ms | load %.2f s | peak RSS %.1f MB | finish: %s\n",
               r.prompt_ids.size(), prompt_tps, generated.size(), decode_tps,
               r.prompt_seconds * 1e3, model.load_report().seconds, peak_mb, finish);
  return 0;
}

}  // namespace dq4::cli
