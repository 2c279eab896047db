// dq4 chat-template: renders a model's chat template for a conversation read from stdin.

#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include "args.h"
#include "commands.h"
#include "dq4/kernels/error.h"
#include "dq4/tokenizer/chat_template.h"

namespace dq4::cli {

int run_chat_template(int argc, char** argv, int first) {
  Args args("chat-template",
            "Renders the chat template of a model directory (chat_template.jinja,\n"
            "tokenizer_config.json or a multimodal processor's chat_template.json) for the\n"
            "conversation on stdin, as transformers' apply_chat_template(tokenize=False) does,\n"
            "and prints the text exactly (no newline added). stdin: a JSON object\n"
            "{\"messages\": [...], \"tools\": [...], ...other template variables} or a bare\n"
            "array of messages.");
  args.option("tokenizer", "DIR", "model or tokenizer directory (or its tokenizer_config.json)")
      .short_name('t', "tokenizer")
      .option("template", "FILE", "use this Jinja template file instead of the model's")
      .option("add-generation-prompt", "", "end with the prompt for the assistant's reply");
  if (!args.parse(argc, argv, first)) return 0;
  const std::string dir = args.value("tokenizer");
  const std::string template_file = args.value("template");
  if (dir.empty() && template_file.empty())
    throw Error("chat-template needs --tokenizer DIR or --template FILE (see --help)");

  ChatTemplate chat_template = [&] {
    if (template_file.empty()) return ChatTemplate::from_tokenizer_config(dir);
    std::FILE* f = std::fopen(template_file.c_str(), "rb");
    if (f == nullptr) throw Error("option --template: cannot read " + template_file);
    std::string source;
    char buffer[4096];
    size_t got;
    while ((got = std::fread(buffer, 1, sizeof buffer, f)) > 0) source.append(buffer, got);
    std::fclose(f);
    ChatTemplate t = ChatTemplate::from_source(source);
    // The model's special tokens still apply to a replacement template.
    if (!dir.empty()) t.special_tokens() = ChatTemplate::read_special_tokens(dir);
    return t;
  }();

  const std::string input(std::istreambuf_iterator<char>(std::cin), {});
  const std::string text = chat_template.render(input, args.flag("add-generation-prompt"));
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace dq4::cli
