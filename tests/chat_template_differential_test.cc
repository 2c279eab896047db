// dq4's chat templates against @huggingface/jinja (tests/js/chat_template_reference.mjs, run by
// node): hundreds of generated conversations through every fixture template and the samples,
// with and without the generation prompt, compared byte for byte.
//
// Where @huggingface/jinja departs from Python Jinja2 (transformers' renderer, which dq4
// follows), the generator stays off that ground, and only there:
//  * str.strip/lstrip/rstrip(chars) ignore `chars` in @huggingface/jinja (they strip all
//    whitespace). Qwen3 strips '\n' around <think> blocks, so its assistant texts and reasoning
//    begin and end with no whitespace but newlines.
//  * JavaScript reads 1.0 in JSON as the integer 1, so tojson prints "1" where Python prints
//    "1.0": tool arguments hold no integral floats.
//  * Whitespace sets differ (Python's strip() also strips U+001C..U+001F and U+0085; JavaScript's
//    trim() also strips U+FEFF): the texts use none of these.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "chat_template_samples.h"
#include "dq4/kernels/error.h"
#include "dq4/tokenizer/chat_template.h"
#include "fixtures.h"

namespace dq4::test {
namespace {

using Json = nlohmann::ordered_json;

// A small deterministic generator (std distributions differ between standard libraries).
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ull;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }
  bool chance(int percent) { return below(100) < static_cast<size_t>(percent); }

 private:
  uint64_t state_;
};

// How a template's conversations must look for it to accept them.
enum class Shape {
  kFreeRoles,    // any roles in any order (ChatML, Llama 3)
  kAlternating,  // user/assistant, starting with user (Mistral Instruct)
  kLlamaTools,   // Llama 3.2: system?, user, assistant with one tool call, tool results
  kQwen3,        // system?, user/assistant with reasoning, tool calls, tool responses
};

std::string random_text(Random& rng) {
  static const char* const kPieces[] = {"Hello",
                                        "world",
                                        "What is 2+2?",
                                        " ",
                                        "  ",
                                        "\t",
                                        "\n",
                                        "\n\n",
                                        "caf\u00e9",
                                        "\u4e2d\u6587",
                                        "\U0001F642",
                                        "\u041f\u0440\u0438\u0432\u0435\u0442",
                                        "{{ x }}",
                                        "{% if %}",
                                        "{#",
                                        "#}",
                                        "'",
                                        "\"",
                                        "\\",
                                        "<|im_end|>",
                                        "</s>",
                                        "[INST]",
                                        "a\u00a0b",
                                        "null",
                                        "{}",
                                        "%s",
                                        "~",
                                        "}}",
                                        "-%}",
                                        "\u00e9\u0301",
                                        "x\r\ny"};
  std::string text;
  const size_t n = rng.below(7);
  for (size_t i = 0; i < n; ++i) text += kPieces[rng.below(std::size(kPieces))];
  return text;
}

// Qwen3's texts: no whitespace but newlines at either end (see the header comment).
std::string qwen_text(Random& rng) {
  std::string text = random_text(rng);
  const size_t begin = text.find_first_not_of(" \t\n\r");
  if (begin == std::string::npos) return rng.chance(50) ? "" : "ok";
  text = text.substr(begin, text.find_last_not_of(" \t\n\r") - begin + 1);
  if (rng.chance(30)) text = "\n" + text;
  if (rng.chance(30)) text += "\n\n";
  return text;
}

Json tool_definitions() {
  return Json::parse(R"J([
    {"type": "function", "function": {"name": "get_weather",
      "description": "Weather for a city, \"now\" or later (\u00b0C)",
      "parameters": {
    "type" : "object",
             "properties"
        : {"city" : {"type" : "string"}, "days" : {"type" : "integer", "minimum" : 1}},
          "required" : ["city"]}
}
},
    {"type": "function", "function": {"name": "search", "description": "Search the web",
      "parameters": {"type": "object", "properties": {"q": {"type": "string"},
        "weight": {"type": "number", "default": 0.5}}}}}
  ])J");
}

Json tool_call(Random& rng, bool string_arguments) {
  Json arguments = Json::object();
  arguments["city"] = random_text(rng);
  if (rng.chance(50)) arguments["days"] = static_cast<int>(rng.below(10));
  if (rng.chance(30)) arguments["weight"] = 2.25;
  if (rng.chance(20)) arguments["tags"] = Json::array({"a", random_text(rng)});
  Json function = {{"name", rng.chance(50) ? "get_weather" : "search"}};
  function["arguments"] = string_arguments ? Json(arguments.dump()) : arguments;
  return {{"type", "function"}, {"function", function}};
}

Json message(const std::string& role, std::string content) {
  return {{"role", role}, {"content", std::move(content)}};
}

Json free_roles(Random& rng) {
  static const char* const kRoles[] = {"system", "user", "assistant", "user", "assistant"};
  Json messages = Json::array();
  const size_t n = 1 + rng.below(6);
  for (size_t i = 0; i < n; ++i)
    messages.push_back(message(kRoles[rng.below(std::size(kRoles))], random_text(rng)));
  return {{"messages", messages}};
}

Json alternating(Random& rng) {
  Json messages = Json::array();
  const size_t n = 1 + rng.below(6);
  for (size_t i = 0; i < n; ++i)
    messages.push_back(message(i % 2 == 0 ? "user" : "assistant", random_text(rng)));
  if (rng.chance(10)) messages.insert(messages.begin(), message("system", random_text(rng)));
  return {{"messages", messages}};
}

Json llama_tools(Random& rng) {
  Json context = {{"date_string", "26 Jul 2024"}};
  Json messages = Json::array();
  if (rng.chance(50)) messages.push_back(message("system", random_text(rng)));
  const size_t turns = rng.below(4);
  for (size_t i = 0; i < turns || (i == 0 && rng.chance(80)); ++i) {
    messages.push_back(message("user", random_text(rng)));
    if (rng.chance(40)) {
      Json call = message("assistant", "");
      call["tool_calls"] = Json::array({tool_call(rng, false)});
      messages.push_back(call);
      messages.push_back(message(rng.chance(50) ? "tool" : "ipython", random_text(rng)));
    }
    if (rng.chance(70)) messages.push_back(message("assistant", random_text(rng)));
  }
  if (messages.empty()) messages.push_back(message("user", random_text(rng)));
  context["messages"] = messages;
  if (rng.chance(60)) context["tools"] = tool_definitions();
  if (rng.chance(40)) context["tools_in_user_message"] = rng.chance(50);
  return context;
}

Json qwen3(Random& rng) {
  Json context = Json::object();
  Json messages = Json::array();
  if (rng.chance(50)) messages.push_back(message("system", qwen_text(rng)));
  const size_t turns = 1 + rng.below(3);
  for (size_t i = 0; i < turns; ++i) {
    messages.push_back(message("user", rng.chance(15)
                                           ? "<tool_response>" + qwen_text(rng) + "</tool_response>"
                                           : qwen_text(rng)));
    const size_t replies = rng.below(3);
    for (size_t r = 0; r < replies; ++r) {
      Json reply = message("assistant", qwen_text(rng));
      const size_t style = rng.below(4);
      if (style == 1) reply["reasoning_content"] = qwen_text(rng);
      if (style == 2) reply["content"] = "<think>" + qwen_text(rng) + "</think>" + qwen_text(rng);
      if (style == 3) reply["reasoning_content"] = nullptr;
      if (rng.chance(35)) {
        Json calls = Json::array();
        for (size_t c = 0, n = 1 + rng.below(2); c < n; ++c)
          calls.push_back(rng.chance(20) ? tool_call(rng, false)["function"]
                                         : tool_call(rng, rng.chance(40)));
        reply["tool_calls"] = calls;
        messages.push_back(reply);
        for (size_t t = 0, n = 1 + rng.below(2); t < n; ++t)
          messages.push_back(message("tool", qwen_text(rng)));
      } else {
        messages.push_back(reply);
      }
    }
  }
  context["messages"] = messages;
  if (rng.chance(40)) context["tools"] = tool_definitions();
  if (rng.chance(30)) context["enable_thinking"] = rng.chance(50);
  return context;
}

struct TemplateUnderTest {
  std::string name;
  ChatTemplate chat_template;
  Shape shape;
};

std::vector<TemplateUnderTest> templates_under_test() {
  const std::string fixtures = fixtures_dir();
  std::vector<TemplateUnderTest> templates;
  templates.push_back({"llama3",
                       ChatTemplate::from_tokenizer_config(fixtures + "/tokenizer-llama3"),
                       Shape::kFreeRoles});
  templates.push_back(
      {"qwen3", ChatTemplate::from_tokenizer_config(fixtures + "/tokenizer-qwen3"), Shape::kQwen3});
  templates.push_back({"chatml", ChatTemplate::from_source(kChatMlTemplate), Shape::kFreeRoles});
  ChatTemplate mistral = ChatTemplate::from_source(kMistralInstructTemplate);
  mistral.special_tokens() = ChatTemplate::read_special_tokens(fixtures + "/tokenizer-mistral");
  templates.push_back({"mistral", std::move(mistral), Shape::kAlternating});
  ChatTemplate llama32 = ChatTemplate::from_source(kLlama32ToolsTemplate);
  llama32.special_tokens() = ChatTemplate::read_special_tokens(fixtures + "/tokenizer-llama3");
  templates.push_back({"llama32_tools", std::move(llama32), Shape::kLlamaTools});
  return templates;
}

Json generate(Shape shape, Random& rng) {
  switch (shape) {
    case Shape::kFreeRoles:
      return free_roles(rng);
    case Shape::kAlternating:
      return alternating(rng);
    case Shape::kLlamaTools:
      return llama_tools(rng);
    case Shape::kQwen3:
      return qwen3(rng);
  }
  return {};
}

// Runs the node reference on every case at once; fails the test (returns null) when it cannot.
Json render_with_node(const Json& input) {
  const std::string js_dir = DQ4_JS_DIR;
  if (!std::filesystem::exists(js_dir + "/node_modules/@huggingface/jinja/package.json")) {
    ADD_FAILURE() << js_dir << "/node_modules/@huggingface/jinja is missing: run "
                  << "scripts/install-deps.sh";
    return nullptr;
  }
  const std::string stem =
      testing::TempDir() + "dq4_chat_template_reference_" + std::to_string(getpid());
  std::ofstream(stem + "_in.json") << input.dump();
  const std::string command =
      "node " + js_dir + "/chat_template_reference.mjs " + stem + "_in.json " + stem + "_out.json";
  const int status = std::system(command.c_str());
  if (status != 0) {
    const bool no_node = WIFEXITED(status) && WEXITSTATUS(status) == 127;
    ADD_FAILURE() << "'" << command << "' failed"
                  << (no_node ? ": node is not on PATH; run scripts/install-deps.sh" : "");
    return nullptr;
  }
  std::ifstream out(stem + "_out.json");
  std::stringstream text;
  text << out.rdbuf();
  return Json::parse(text.str());
}

TEST(ChatTemplateDifferential, MatchesHuggingFaceJinjaOnGeneratedConversations) {
  const std::vector<TemplateUnderTest> templates = templates_under_test();
  Json input = {{"templates", Json::object()}, {"cases", Json::array()}};
  for (const auto& t : templates) {
    Json variables = Json::object();
    for (const auto& [name, text] : t.chat_template.special_tokens()) variables[name] = text;
    input["templates"][t.name] = {{"source", t.chat_template.source()}, {"variables", variables}};
  }
  struct Rendered {
    size_t template_index;
    bool ok;
    std::string text;
  };
  std::vector<Rendered> ours;
  Random rng(20251130);
  constexpr int kConversationsPerTemplate = 80;
  for (size_t t = 0; t < templates.size(); ++t) {
    for (int i = 0; i < kConversationsPerTemplate; ++i) {
      const Json context = generate(templates[t].shape, rng);
      for (const bool prompt : {false, true}) {
        input["cases"].push_back({{"template", templates[t].name},
                                  {"context", context},
                                  {"add_generation_prompt", prompt}});
        try {
          ours.push_back({t, true, templates[t].chat_template.render(context.dump(), prompt)});
        } catch (const Error& e) {
          ours.push_back({t, false, e.what()});
        }
      }
    }
  }
  const Json reference = render_with_node(input);
  if (reference.is_null()) return;
  ASSERT_EQ(reference.size(), ours.size());
  int compared = 0, errors_both = 0, mismatches = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    const Json& theirs = reference[i];
    const std::string& name = templates[ours[i].template_index].name;
    if (theirs.contains("error") || !ours[i].ok) {
      // Both must refuse (raise_exception); the template's own message must come through.
      EXPECT_TRUE(theirs.contains("error") && !ours[i].ok)
          << name << " case " << i << ": dq4 " << (ours[i].ok ? "rendered" : "failed: ")
          << (ours[i].ok ? "" : ours[i].text) << "; reference "
          << (theirs.contains("error") ? "failed: " + theirs["error"].get<std::string>()
                                       : "rendered")
          << "\ncontext: " << input["cases"][i].dump();
      if (theirs.contains("error") && !ours[i].ok) {
        EXPECT_NE(ours[i].text.find(theirs["error"].get<std::string>()), std::string::npos)
            << ours[i].text << " vs " << theirs["error"];
        ++errors_both;
      }
      continue;
    }
    ++compared;
    const std::string expected = theirs["text"].get<std::string>();
    if (expected != ours[i].text && ++mismatches <= 5)
      ADD_FAILURE() << name << " case " << i << " differs\ncontext: " << input["cases"][i].dump()
                    << "\nreference: " << Json(expected).dump()
                    << "\ndq4:       " << Json(ours[i].text).dump();
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_GT(compared, 700) << "too few conversations rendered by both";
  EXPECT_GT(errors_both, 0) << "no conversation exercised raise_exception";
}

}  // namespace
}  // namespace dq4::test
