// dq4 chat: an interactive conversation in the terminal through the model's chat template. The
// engine's prefix cache keeps the conversation's KV blocks across turns: each turn computes only
// the tokens the template adds (from the last full block the turns share).

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "args.h"
#include "commands.h"
#include "dq4/engine/offline_engine.h"
#include "dq4/kernels/error.h"
#include "model_options.h"
#include "prompt.h"
#include "request_options.h"

namespace dq4::cli {

int run_chat(int argc, char** argv, int first) {
  Args args("chat",
            "An interactive chat with a model through its chat template: type a message and\n"
            "press Enter; the reply streams back. /reset starts a new conversation, /exit (or\n"
            "end of input) quits. The KV cache is reused across turns.");
  declare_model_options(args);
  declare_request_options(args);
  args.option("system", "TEXT", "a system message at the start of the conversation");
  args.option("ctx", "N", "context size in tokens (the whole conversation)", "4096");
  if (!args.parse(argc, argv, first)) return 0;
  const Request options = request_options(args);
  const int64_t ctx = args.integer("ctx");
  if (ctx <= 0) throw Error("option --ctx: must be positive");
  LoadedModel loaded = load_model(args, /*need_tokenizer=*/true);
  check_stop_token_ids(options, *loaded.model);
  OfflineEngine engine(*loaded.model, *loaded.tokenizer,
                       offline_engine_options(ctx, *loaded.model, kv_type_option(args)),
                       &loaded.threads());
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
    std::vector<TokenId> prompt =
        chat_prompt_ids(args.value("model"), *loaded.tokenizer, messages.dump());
    GenerationOutput r;
    try {
      Request request = options;
      set_prompt(request, std::move(prompt), engine.options().max_model_len);
      r = engine.generate(std::move(request), [](const ChoiceDelta& d) {
        std::fwrite(d.text.data(), 1, d.text.size(), stdout);
        std::fflush(stdout);
      });
    } catch (const Error& e) {
      std::fprintf(stderr, "error: %s (/reset starts a new conversation)\n", e.what());
      messages.erase(messages.end() - 1);
      continue;
    }
    std::printf("\n");
    const double decode_tps =
        r.decode_seconds > 0 ? static_cast<double>(r.token_ids.size() - 1) / r.decode_seconds : 0;
    std::fprintf(stderr, "[%zu of %zu prompt tokens computed, %.1f tokens/s decode]\n",
                 r.prompt_ids.size() - static_cast<size_t>(r.cached_prompt_tokens),
                 r.prompt_ids.size(), decode_tps);
    messages.push_back({{"role", "assistant"}, {"content", r.text}});
  }
  return 0;
}

}  // namespace dq4::cli
