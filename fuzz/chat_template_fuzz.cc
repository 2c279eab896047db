// libFuzzer target: arbitrary bytes as a chat template, parsed and rendered for a fixed
// conversation (with tools, tool calls and reasoning). Parsing and rendering must either succeed
// or throw dq4::Error: no crash, hang, leak or runaway memory, whatever the template does.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "dq4/kernels/error.h"
#include "dq4/tokenizer/chat_template.h"

namespace {

constexpr const char* kContext = R"({
  "messages": [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "<think>\nlook it up\n</think>\n\n",
     "tool_calls": [{"type": "function",
                     "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "content": "sunny"},
    {"role": "assistant", "content": "Sunny.", "reasoning_content": "easy"}],
  "tools": [{"type": "function", "function": {"name": "get_weather",
             "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
  "enable_thinking": false
})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  try {
    dq4::ChatTemplate chat_template = dq4::ChatTemplate::from_source(source);
    chat_template.special_tokens() = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
    chat_template.render(kContext, size % 2 == 0);
  } catch (const dq4::Error&) {
  }
  return 0;
}
