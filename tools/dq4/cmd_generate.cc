// dq4 generate: one prompt in, text streamed out, then the speeds.

#include <cstdio>
#include <nlohmann/json.hpp>

#include "args.h"
#include "commands.h"
#include "dq4/engine/session.h"
#include "dq4/kernels/error.h"
#include "model_options.h"
#include "progress.h"
#include "prompt.h"
#include "sampling_options.h"

namespace dq4::cli {
namespace {

double per_second(int64_t count, double seconds) { return seconds > 0 ? count / seconds : 0.0; }

}  // namespace

int run_generate(int argc, char** argv, int first) {
  Args args("generate",
            "Generates text from a prompt with a model directory (Hugging Face or\n"
            "compressed-tensors), streaming it to stdout, then prints prompt and decode speed,\n"
            "time to first token, load time and peak memory on stderr (--json: one object).");
  declare_model_options(args);
  declare_prompt_options(args);
  declare_sampling_options(args);
  args.option("ctx", "N", "context size in tokens (prompt + output)", "4096");
  args.option("json", "", "print one JSON object (ids, text, speeds) instead of streaming");
  if (!args.parse(argc, argv, first)) return 0;
  const SamplingParams sampling = sampling_params(args);
  const bool json = args.flag("json");

  LoadedModel loaded = load_model(args, /*need_tokenizer=*/true, /*quiet=*/json);
  const Model& model = *loaded.model;
  const StopConditions stop = stop_conditions(args, model);
  const std::vector<int32_t> prompt = prompt_ids(args, *loaded.tokenizer);
  if (prompt.empty()) throw Error("the prompt is empty");
  const int64_t ctx = args.integer("ctx");
  if (ctx <= 0) throw Error("option --ctx: must be positive");
  if (static_cast<int64_t>(prompt.size()) > std::min(ctx, model.max_context()))
    throw Error("the prompt has " + std::to_string(prompt.size()) +
                " tokens, more than the context of " +
                std::to_string(std::min(ctx, model.max_context())) + " tokens (--ctx)");

  Session session(*loaded.model, ctx, kv_type_option(args), 512, &loaded.threads());
  const auto stream = [&](std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  };
  const GenerationResult r = generate(session, *loaded.tokenizer, prompt, sampling, stop,
                                      json ? std::function<void(std::string_view)>() : stream);
  const double prompt_tps = per_second(r.prompt_tokens_computed, r.prompt_seconds);
  const int64_t decoded =
      r.generated_ids.empty() ? 0 : static_cast<int64_t>(r.generated_ids.size()) - 1;
  const double decode_tps = per_second(decoded, r.decode_seconds);
  const double peak_mb = static_cast<double>(peak_rss_bytes()) / 1e6;
  if (json) {
    nlohmann::json out = {{"prompt_ids", r.prompt_ids},
                          {"generated_ids", r.generated_ids},
                          {"text", r.text},
                          {"finish_reason", r.finish_reason},
                          {"prompt_tokens", r.prompt_ids.size()},
                          {"completion_tokens", r.generated_ids.size()},
                          {"prompt_tokens_per_s", prompt_tps},
                          {"decode_tokens_per_s", decode_tps},
                          {"ttft_ms", r.prompt_seconds * 1e3},
                          {"load_s", model.load_report().seconds},
                          {"peak_rss_mb", peak_mb}};
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::printf("\n");
  std::fprintf(stderr,
               "\nprompt: %zu tokens, %.1f tokens/s | decode: %zu tokens, %.1f tokens/s | time to "
               "first token %.1f ms | load %.2f s | peak RSS %.1f MB | finish: %s\n",
               r.prompt_ids.size(), prompt_tps, r.generated_ids.size(), decode_tps,
               r.prompt_seconds * 1e3, model.load_report().seconds, peak_mb,
               r.finish_reason.c_str());
  return 0;
}

}  // namespace dq4::cli
