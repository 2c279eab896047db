#include "prompt.h"

#include <nlohmann/json.hpp>

#include "dq4/kernels/error.h"
#include "dq4/tokenizer/chat_template.h"

namespace dq4::cli {

void declare_prompt_options(Args& args) {
  args.option("prompt", "TEXT", "the prompt (the tokenizer adds BOS as the model expects)")
      .short_name('p', "prompt");
  args.option("chat", "TEXT", "a user message, rendered through the model's chat template");
  args.option("system", "TEXT", "a system message before --chat");
  args.option("prompt-ids", "IDS", "the prompt as comma-separated token ids, used as they are");
}

std::vector<int32_t> chat_prompt_ids(const std::string& model_dir, const Tokenizer& tokenizer,
                                     const std::string& messages_json) {
  const ChatTemplate tmpl = ChatTemplate::from_tokenizer_config(model_dir);
  const std::string text = tmpl.render(messages_json, /*add_generation_prompt=*/true);
  return tokenizer.encode(text, /*add_special_tokens=*/false);
}

std::vector<int32_t> prompt_ids(const Args& args, const Tokenizer& tokenizer) {
  const bool text = !args.value("prompt").empty(), chat = !args.value("chat").empty(),
             ids = !args.value("prompt-ids").empty();
  if (text + chat + ids != 1) throw Error("give exactly one of -p/--prompt, --chat, --prompt-ids");
  if (!args.value("system").empty() && !chat) throw Error("option --system needs --chat");
  if (ids) {
    std::vector<int32_t> out;
    for (int64_t id : parse_integer_list("prompt-ids", args.value("prompt-ids"))) {
      if (id < 0 || id > INT32_MAX)
        throw Error("option --prompt-ids: id " + std::to_string(id) + " out of range");
      out.push_back(static_cast<int32_t>(id));
    }
    return out;
  }
  if (text) return tokenizer.encode(args.value("prompt"), /*add_special_tokens=*/true);
  nlohmann::json messages = nlohmann::json::array();
  if (!args.value("system").empty())
    messages.push_back({{"role", "system"}, {"content", args.value("system")}});
  messages.push_back({{"role", "user"}, {"content", args.value("chat")}});
  return chat_prompt_ids(args.value("model"), tokenizer, messages.dump());
}

}  // namespace dq4::cli
