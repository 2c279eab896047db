// dq4 chat: an interactive conversation in the terminal through the model's chat template. The
// KV cache is kept across turns: each turn computes only the tokens the template adds.

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "args.h"
#include "commands.h"
#include "dq4/engine/session.h"
#include "dq4/kernels/error.h"
#include "model_options.h"
#include "prompt.h"
#include "sampling_options.h"

namespace dq4::cli {

int run_chat(int argc, char** argv, int first) {
  Args args("chat",
            "An interactive chat with a model through its chat template: type a message and\n"
            "press Enter; the reply streams back. /reset starts a new conversation, /exit (or\n"
            "end of input) quits. The KV cache is reused across turns.");
  declare_model_options(args);
  declare_sampling_options(args);
  args.option("system", "TEXT", "a system message at the start of the conversation");
  args.option("ctx", "N", "context size in tokens (the whole conversation)", "4096");
  if (!args.parse(argc, argv, first)) return 0;
  const SamplingParams sampling = sampling_params(args);
  LoadedModel loaded = load_model(args, /*need_tokenizer=*/true);
  const StopConditions stop = stop_conditions(args, *loaded.model);
  Session session(*loaded.model, args.integer("ctx"), kv_type_option(args), 512, &loaded.threads());
  const bool interactive = ::isatty(STDIN_FILENO) == 1;
  const auto start = [&] {
    nlohmann::json messages = nlohmann::json::array();
    if (!args.value("system").empty())
      messages.push_back({{"role", "system"}, {"content", args.value("system")}});
    return messages;
  };
  nlohmann::json messages = start();
  std::string line;
  for (;;) {
    if (interactive) std::fputs("> ", stdout);
    std::fflush(stdout);
    if (!std::getline(std::cin, line) || line == "/exit") break;
    if (line == "/reset") {
      messages = start();
      continue;
    }
    if (line.empty()) continue;
    messages.push_back({{"role", "user"}, {"content", line}});
    const std::vector<int32_t> prompt =
        chat_prompt_ids(args.value("model"), *loaded.tokenizer, messages.dump());
    GenerationResult r;
    try {
      r = generate(session, *loaded.tokenizer, prompt, sampling, stop, [](std::string_view text) {
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
      });
    } catch (const Error& e) {
      std::fprintf(stderr, "error: %s (/reset starts a new conversation)\n", e.what());
      messages.erase(messages.end() - 1);
      continue;
    }
    std::printf("\n");
    std::fprintf(stderr, "[%zu of %zu prompt tokens computed, %.1f tokens/s decode]\n",
                 static_cast<size_t>(r.prompt_tokens_computed), r.prompt_ids.size(),
                 r.decode_seconds > 0 ? (r.generated_ids.size() - 1) / r.decode_seconds : 0.0);
    messages.push_back({{"role", "assistant"}, {"content", r.text}});
  }
  return 0;
}

}  // namespace dq4::cli
