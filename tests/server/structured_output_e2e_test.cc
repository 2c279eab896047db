// Structured outputs end to end: `dq4 serve` on tiny synthetic models (random weights) with the
// Llama 3, Qwen3 and Mistral tokenizers and chat templates, 100 seeded generations per kind of
// constraint (one request with n = 100; fewer in the sanitized build), each output checked by an
// independent validator (Ajv, JavaScript's RegExp, equality:
// tests/js/validate_structured_outputs.mjs). A random model is the harshest witness: it picks among
// whatever the mask allows. The 400s for constraints that cannot be compiled, and two at once.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "../chat_template_samples.h"
#include "../cli_runner.h"
#include "../fixtures.h"
#include "../sanitized_build.h"
#include "http_client.h"
#include "serve_process.h"

namespace dq4::test {
namespace {

using nlohmann::json;
using server::HttpClient;
using server::HttpReply;

constexpr int kGenerations = cases_to_draw(100);

// A tiny model of `preset` with the tokenizer fixture `tokenizer`, and the arguments that serve it
// (with `chat_template` when the tokenizer has none).
class SynthModel {
 public:
  SynthModel(const std::string& preset, const std::string& tokenizer,
             const std::string& chat_template = "")
      : dir_(std::filesystem::temp_directory_path() /
             ("dq4-structured-" + preset + "-" + std::to_string(getpid()))) {
    const CliResult r = run_dq4("synth --force -o " + shell_quote(dir_.string()) + " --preset " +
                                preset + " --tokenizer " + shell_quote(fixture_path(tokenizer)));
    if (r.exit_code != 0) throw std::runtime_error("dq4 synth failed: " + r.err);
    args_ = {dir_.string(), "--served-model-name", "tiny", "--kv-cache-memory", "64MiB"};
    if (!chat_template.empty()) {
      const std::string path = (dir_ / "chat_template.jinja").string();
      std::ofstream(path) << chat_template;
      args_.insert(args_.end(), {"--chat-template", path});
    }
  }
  ~SynthModel() { std::filesystem::remove_all(dir_); }
  const std::vector<std::string>& serve_args() const { return args_; }

 private:
  std::filesystem::path dir_;
  std::vector<std::string> args_;
};

// A hundred choices on a loaded machine take a while; the timeout is a safety net only.
HttpReply post(int port, const std::string& path, const json& body) {
  HttpClient client("127.0.0.1", port, /*timeout_seconds=*/900);
  client.send("POST", path, body.dump(), "");
  return client.read_reply();
}

// One kind of constraint: the request that asks for it and how its outputs are checked.
struct Case {
  std::string name;
  bool chat = false;
  json constraint;  // the request's constraint fields
  json check;       // {"kind": ..., "schema" | "pattern" | "choices": ...} for the validator
  int max_tokens = 200;
  // Outputs a random model may leave unfinished at max_tokens (unbounded strings or recursion):
  // at least this percentage of the generations must finish. 100: every one.
  int must_finish_percent = 100;
};

// How many of the generations must finish: all, or the case's share of them; the sanitized build's
// few generations need one finished output (something to validate) where not all must finish.
int required_finished(const Case& c) {
  if (c.must_finish_percent == 100) return kGenerations;
  return kSanitizedShare > 1 ? 1 : (c.must_finish_percent * kGenerations + 99) / 100;
}

struct Outcome {
  std::vector<std::string> finished;  // finish_reason stop
  int cut = 0;                        // finish_reason length
  std::string error;
};

Outcome generate(int port, const Case& c, int seed) {
  json body = c.constraint;
  body["model"] = "tiny";
  body["n"] = kGenerations;
  body["seed"] = seed;
  body["temperature"] = 1.0;
  body["max_tokens"] = c.max_tokens;
  if (c.chat)
    body["messages"] = json::array({{{"role", "user"}, {"content", "Answer, please."}}});
  else
    body["prompt"] = "The answer:";
  Outcome out;
  HttpReply r;
  try {
    r = post(port, c.chat ? "/v1/chat/completions" : "/v1/completions", body);
  } catch (const std::exception& e) {
    out.error = e.what();
    return out;
  }
  if (r.status != 200) {
    out.error = std::to_string(r.status) + " " + r.body;
    return out;
  }
  const json reply = json::parse(r.body);
  for (const json& choice : reply["choices"]) {
    const std::string text = c.chat ? choice["message"]["content"] : choice["text"];
    if (choice["finish_reason"] == "length")
      ++out.cut;
    else if (choice["finish_reason"] == "stop")
      out.finished.push_back(text);
    else
      out.error = "finish_reason " + choice["finish_reason"].dump();
  }
  return out;
}

// The validator's report on every case's finished outputs.
json validate(const std::vector<Case>& cases, const std::vector<Outcome>& outcomes) {
  json input = json::array();
  for (size_t i = 0; i < cases.size(); ++i) {
    json c = cases[i].check;
    c["name"] = cases[i].name;
    c["outputs"] = outcomes[i].finished;
    input.push_back(c);
  }
  const std::string path = std::filesystem::temp_directory_path() /
                           ("dq4-structured-cases-" + std::to_string(getpid()) + ".json");
  std::ofstream(path) << input.dump();
  const CliResult r = run_node(DQ4_SOURCE_DIR "/tests/js/validate_structured_outputs.mjs " + path);
  std::filesystem::remove(path);
  if (r.exit_code != 0) {
    ADD_FAILURE() << "the validator failed: " << r.out;
    return json::object();
  }
  return json::parse(r.out);
}

void run_cases(const SynthModel& model, const std::vector<Case>& cases) {
  ASSERT_TRUE(std::filesystem::exists(DQ4_SOURCE_DIR "/tests/js/node_modules/ajv/package.json"))
      << "tests/js/node_modules/ajv is missing: run scripts/install-deps.sh";
  ServeProcess server(model.serve_args());
  // All at once: the constrained choices of every case share the engine's steps.
  std::vector<Outcome> outcomes(cases.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < cases.size(); ++i)
    threads.emplace_back(
        [&, i] { outcomes[i] = generate(server.port(), cases[i], 1000 + static_cast<int>(i)); });
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < cases.size(); ++i) {
    ASSERT_EQ(outcomes[i].error, "") << cases[i].name;
    EXPECT_GE(static_cast<int>(outcomes[i].finished.size()), required_finished(cases[i]))
        << cases[i].name << ": " << outcomes[i].cut << " of " << kGenerations
        << " cut at max_tokens " << cases[i].max_tokens;
  }
  const json report = validate(cases, outcomes);
  for (const Case& c : cases) {
    ASSERT_TRUE(report.contains(c.name)) << report.dump();
    const json& r = report[c.name];
    EXPECT_TRUE(r["invalid"].empty())
        << c.name << ": " << r["invalid"].size() << " of " << r["checked"] << " invalid, e.g. "
        << r["invalid"][0].dump();
  }
  EXPECT_EQ(server.terminate(), 0) << server.log();
}

json schema_case(const json& schema) { return {{"kind", "json_schema"}, {"schema", schema}}; }

const json kNested = json::parse(R"({
  "type": "object",
  "properties": {
    "id": {"type": "integer", "minimum": 0, "maximum": 1000},
    "user": {"type": "object",
             "properties": {"name": {"type": "string", "maxLength": 10},
                            "tags": {"type": "array", "items": {"type": "string", "maxLength": 5},
                                     "maxItems": 3},
                            "active": {"type": "boolean"}},
             "required": ["name", "tags", "active"], "additionalProperties": false},
    "score": {"type": "number"},
    "note": {"type": "null"}},
  "required": ["id", "user", "note"],
  "additionalProperties": false})");

const json kMultiByte = json::parse(R"({
  "type": "object",
  "properties": {
    "word": {"type": "string", "enum": ["café", "日本語", "🙂 ok", "naïve"]},
    "greek": {"type": "string", "pattern": "^[α-ω]{1,6}$"},
    "free": {"type": "string", "minLength": 1, "maxLength": 4}},
  "required": ["word", "greek", "free"],
  "additionalProperties": false})");

const json kRecursive = json::parse(R"({
  "$defs": {"node": {"type": "object",
                     "properties": {"v": {"type": "integer", "minimum": 0, "maximum": 9},
                                    "kids": {"type": "array", "items": {"$ref": "#/$defs/node"},
                                             "maxItems": 1}},
                     "required": ["v", "kids"], "additionalProperties": false}},
  "$ref": "#/$defs/node"})");

const json kEnums = json::parse(R"({
  "type": "object",
  "properties": {
    "color": {"enum": ["red", "green", "blue", null, 3, {"rgb": [1, 2, 3]}]},
    "size": {"type": "string", "enum": ["S", "M", "L", "XL", "XXL"]},
    "ok": {"const": true},
    "level": {"type": "integer", "enum": [1, 10, 100]}},
  "required": ["color", "size", "ok", "level"],
  "additionalProperties": false})");

const json kAnyOf = json::parse(R"({
  "anyOf": [
    {"type": "object",
     "properties": {"kind": {"const": "circle"}, "r": {"type": "integer", "minimum": 1, "maximum": 100}},
     "required": ["kind", "r"], "additionalProperties": false},
    {"type": "object",
     "properties": {"kind": {"const": "rect"}, "w": {"type": "integer"}, "h": {"type": "integer"}},
     "required": ["kind", "w", "h"], "additionalProperties": false},
    {"type": "string", "maxLength": 3},
    {"type": "array", "items": {"type": "boolean"}, "minItems": 2, "maxItems": 2}]})");

const json kArray = json::parse(R"({
  "type": "array",
  "items": {"type": "object",
            "properties": {"c": {"type": "string", "enum": ["red", "green", "blue"]},
                           "n": {"type": "integer", "minimum": -5, "maximum": 5}},
            "required": ["c", "n"], "additionalProperties": false},
  "minItems": 1, "maxItems": 4})");

const json kFormats = json::parse(R"({
  "type": "object",
  "properties": {
    "at": {"type": "string", "format": "date-time"},
    "id": {"type": "string", "format": "uuid"},
    "ip": {"type": "string", "format": "ipv4"},
    "ip6": {"type": "string", "format": "ipv6"},
    "span": {"type": "string", "format": "duration"}},
  "required": ["at", "id", "ip", "ip6", "span"],
  "additionalProperties": false})");

// Nested lists of small numbers, as GBNF, and the same language as a JSON schema for the check.
const char* kListGrammar =
    "root ::= list\n"
    "list ::= \"[\" ( item ( \",\" item ){0,2} )? \"]\"\n"
    "item ::= [0-9] | [1-9] [0-9] | list\n";
const json kListSchema = json::parse(R"({
  "$defs": {"list": {"type": "array", "maxItems": 3,
                     "items": {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 99},
                                         {"$ref": "#/$defs/list"}]}}},
  "$ref": "#/$defs/list"})");

TEST(StructuredOutputsEndToEnd, Llama3Tokenizer) {
  run_cases(SynthModel("tiny-llama3", "tokenizer-llama3"),
            {{"nested objects (response_format json_schema)",
              true,
              {{"response_format",
                {{"type", "json_schema"},
                 {"json_schema", {{"name", "record"}, {"schema", kNested}, {"strict", true}}}}}},
              schema_case(kNested)},
             {"multi-byte strings (structured_outputs.json)",
              true,
              {{"structured_outputs", {{"json", kMultiByte}}}},
              schema_case(kMultiByte)},
             {"regex (structured_outputs.regex)",
              false,
              {{"structured_outputs", {{"regex", "[a-z]{2,6}@[a-z]{2,5}\\.(com|org|fr)"}}}},
              {{"kind", "regex"}, {"pattern", "[a-z]{2,6}@[a-z]{2,5}\\.(com|org|fr)"}},
              40},
             {"GBNF grammar (guided_grammar)",
              false,
              {{"guided_grammar", kListGrammar}},
              schema_case(kListSchema),
              120}});
}

TEST(StructuredOutputsEndToEnd, Qwen3Tokenizer) {
  run_cases(SynthModel("tiny-qwen3", "tokenizer-qwen3"),
            {{"recursive $ref (guided_json as text)",
              false,
              {{"guided_json", kRecursive.dump()}},
              schema_case(kRecursive),
              200,
              90},
             {"enums and const (response_format json_schema)",
              true,
              {{"response_format",
                {{"type", "json_schema"}, {"json_schema", {{"name", "e"}, {"schema", kEnums}}}}}},
              schema_case(kEnums)},
             {"choice (guided_choice)",
              true,
              {{"guided_choice", {"yes", "no", "peut-être", "日本", "🙂"}}},
              {{"kind", "choice"}, {"choices", {"yes", "no", "peut-être", "日本", "🙂"}}},
              20}});
}

TEST(StructuredOutputsEndToEnd, MistralTokenizer) {
  run_cases(
      SynthModel("tiny-mistral", "tokenizer-mistral", kMistralInstructTemplate),
      {{"anyOf (structured_outputs.json)",
        false,
        {{"structured_outputs", {{"json", kAnyOf}}}},
        schema_case(kAnyOf)},
       {"arrays of objects (guided_json)", true, {{"guided_json", kArray}}, schema_case(kArray)},
       {"string formats (response_format json_schema)",
        true,
        {{"response_format",
          {{"type", "json_schema"}, {"json_schema", {{"name", "f"}, {"schema", kFormats}}}}}},
        schema_case(kFormats)},
       // Any object: strings are unbounded, and a random model closes one only by chance.
       {"json_object (response_format)",
        true,
        {{"response_format", {{"type", "json_object"}}}},
        {{"kind", "json_object"}},
        200,
        25}});
}

TEST(StructuredOutputsEndToEnd, ConstraintsThatCannotCompileAre400sNamingTheField) {
  const SynthModel model("tiny-mistral", "tokenizer-mistral", kMistralInstructTemplate);
  ServeProcess server(model.serve_args());
  struct Bad {
    bool chat;
    json fields;
    std::string param, fragment;
  };
  const std::vector<Bad> cases = {
      {true,
       {{"response_format",
         {{"type", "json_schema"},
          {"json_schema",
           {{"name", "x"}, {"schema", {{"type", "object"}, {"if", json::object()}}}}}}}},
       "response_format.json_schema.schema",
       "'if'"},
      {false,
       {{"guided_json", {{"type", "object"}, {"patternProperties", json::object()}}}},
       "guided_json",
       "'patternProperties'"},
      {false,
       {{"guided_json", {{"type", "array"}, {"uniqueItems", true}}}},
       "guided_json",
       "'uniqueItems'"},
      {true, json::parse(R"({"structured_outputs": {"json": {"properties": {"a": {"not": {}}}}}})"),
       "structured_outputs.json", "'not'"},
      {false, {{"structured_outputs", {{"regex", "(ab"}}}}, "structured_outputs.regex", "regex"},
      {false, {{"guided_grammar", "root ::= item\n"}}, "guided_grammar", "'item'"},
      {false, {{"guided_grammar", "root ::= \"a"}}, "guided_grammar", "grammar"},
      {true,
       {{"guided_regex", "a+"}, {"response_format", {{"type", "json_object"}}}},
       "guided_regex",
       "cannot both be given"},
      {false,
       {{"structured_outputs", {{"choice", {"a"}}, {"regex", "a"}}}},
       "structured_outputs.choice",
       "cannot both be given"},
      {false,
       {{"structured_outputs", {{"jsonn", json::object()}}}},
       "structured_outputs.jsonn",
       "Unrecognized"},
      {true, {{"response_format", {{"type", "xml"}}}}, "response_format.type", "xml"},
      {false,
       {{"guided_whitespace_pattern", " "}, {"guided_json", json::object()}},
       "guided_whitespace_pattern",
       "not supported"},
  };
  for (const Bad& b : cases) {
    json body = b.fields;
    body["max_tokens"] = 5;
    if (b.chat)
      body["messages"] = json::array({{{"role", "user"}, {"content", "Hi"}}});
    else
      body["prompt"] = "Hi";
    const HttpReply r =
        post(server.port(), b.chat ? "/v1/chat/completions" : "/v1/completions", body);
    ASSERT_EQ(r.status, 400) << body.dump() << " -> " << r.body;
    const json error = json::parse(r.body)["error"];
    EXPECT_EQ(error["type"], "invalid_request_error") << r.body;
    EXPECT_EQ(error["param"], b.param) << r.body;
    EXPECT_NE(error["message"].get<std::string>().find(b.fragment), std::string::npos) << r.body;
  }
  // The server is still well.
  const HttpReply ok =
      post(server.port(), "/v1/completions",
           {{"prompt", "Hi"}, {"max_tokens", 10}, {"guided_choice", {"fine", "good"}}});
  ASSERT_EQ(ok.status, 200) << ok.body;
  const std::string text = json::parse(ok.body)["choices"][0]["text"];
  EXPECT_TRUE(text == "fine" || text == "good") << text;
  const HttpReply regex =
      post(server.port(), "/v1/completions",
           {{"prompt", "Hi"}, {"max_tokens", 10}, {"guided_regex", "(ok|no)!"}});
  ASSERT_EQ(regex.status, 200) << regex.body;
  const std::string answer = json::parse(regex.body)["choices"][0]["text"];
  EXPECT_TRUE(answer == "ok!" || answer == "no!") << answer;
  EXPECT_EQ(server.terminate(), 0) << server.log();
}

}  // namespace
}  // namespace dq4::test
