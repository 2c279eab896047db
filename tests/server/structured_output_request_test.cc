// The constraint fields of the generation requests: OpenAI's response_format, vLLM's
// structured_outputs and guided_* fields, read into one spec naming the field it came from; the
// 400s for malformed ones, unknown keys, and two at once.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "api_error.h"
#include "openai_request.h"

namespace dq4::server {
namespace {

using nlohmann::json;
using Kind = constrain::ConstraintSpec::Kind;

json chat_with(const json& fields) {
  json body = fields;
  body["messages"] = json::array({{{"role", "user"}, {"content", "Hi"}}});
  return body;
}

json completion_with(const json& fields) {
  json body = fields;
  body["prompt"] = "Hi";
  return body;
}

std::optional<OutputConstraint> chat_constraint(const json& fields) {
  return parse_chat_request(chat_with(fields).dump()).fields.constraint;
}

std::optional<OutputConstraint> completion_constraint(const json& fields) {
  return parse_completion_request(completion_with(fields).dump()).fields.constraint;
}

void expect_400(const json& fields, const std::string& param, const std::string& fragment) {
  for (bool chat : {true, false}) {
    try {
      if (chat)
        parse_chat_request(chat_with(fields).dump());
      else
        parse_completion_request(completion_with(fields).dump());
      ADD_FAILURE() << fields.dump() << ": expected a 400 mentioning '" << fragment << "'";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400) << e.what();
      EXPECT_EQ(e.param(), param) << e.what();
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  }
}

TEST(StructuredOutputRequest, ResponseFormat) {
  EXPECT_FALSE(chat_constraint(json::object()));
  EXPECT_FALSE(chat_constraint({{"response_format", {{"type", "text"}}}}));
  auto object = chat_constraint({{"response_format", {{"type", "json_object"}}}});
  ASSERT_TRUE(object);
  EXPECT_EQ(object->spec.kind, Kind::json_object);
  EXPECT_EQ(object->param, "response_format");
  // The schema keeps the client's key order: objects come out in their properties' order.
  const std::string body = R"({"messages": [{"role": "user", "content": "Hi"}],
      "response_format": {"type": "json_schema", "json_schema": {"name": "p", "strict": true,
        "description": "a point",
        "schema": {"type": "object", "properties": {"y": {"type": "number"},
                                                    "x": {"type": "number"}}}}}})";
  const auto schema = parse_chat_request(body).fields.constraint;
  ASSERT_TRUE(schema);
  EXPECT_EQ(schema->spec.kind, Kind::json_schema);
  EXPECT_EQ(schema->param, "response_format.json_schema.schema");
  EXPECT_EQ(schema->spec.text,
            R"({"type":"object","properties":{"y":{"type":"number"},"x":{"type":"number"}}})");
  // As vLLM, on /v1/completions too.
  auto completion = completion_constraint({{"response_format", {{"type", "json_object"}}}});
  ASSERT_TRUE(completion);
  EXPECT_EQ(completion->spec.kind, Kind::json_object);
}

TEST(StructuredOutputRequest, StructuredOutputsAndGuidedFields) {
  const json schema = {{"type", "integer"}};
  struct Expected {
    json fields;
    Kind kind;
    std::string text, param;
  };
  const std::vector<Expected> cases = {
      {{{"structured_outputs", {{"json", schema}}}},
       Kind::json_schema,
       schema.dump(),
       "structured_outputs.json"},
      {{{"structured_outputs", {{"json", schema.dump()}}}},
       Kind::json_schema,
       schema.dump(),
       "structured_outputs.json"},
      {{{"structured_outputs", {{"regex", "a+"}}}}, Kind::regex, "a+", "structured_outputs.regex"},
      {{{"structured_outputs", {{"grammar", "root ::= \"a\""}}}},
       Kind::grammar,
       "root ::= \"a\"",
       "structured_outputs.grammar"},
      {{{"structured_outputs", {{"json_object", true}}}},
       Kind::json_object,
       "",
       "structured_outputs"},
      {{{"guided_json", schema}, {"guided_decoding_backend", "xgrammar"}},
       Kind::json_schema,
       schema.dump(),
       "guided_json"},
      {{{"guided_regex", "[0-9]{3}"}}, Kind::regex, "[0-9]{3}", "guided_regex"},
      {{{"guided_grammar", "root ::= \"b\""}}, Kind::grammar, "root ::= \"b\"", "guided_grammar"},
  };
  for (const Expected& e : cases)
    for (bool chat : {true, false}) {
      const auto c = chat ? chat_constraint(e.fields) : completion_constraint(e.fields);
      ASSERT_TRUE(c) << e.fields.dump();
      EXPECT_EQ(c->spec.kind, e.kind) << e.fields.dump();
      EXPECT_EQ(c->spec.text, e.text) << e.fields.dump();
      EXPECT_EQ(c->param, e.param) << e.fields.dump();
    }
  for (const json& fields : {json{{"structured_outputs", {{"choice", {"a", "b"}}}}},
                             json{{"guided_choice", {"a", "b"}}}}) {
    const auto c = completion_constraint(fields);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->spec.kind, Kind::choice);
    EXPECT_EQ(c->spec.choices, (std::vector<std::string>{"a", "b"}));
  }
  EXPECT_FALSE(completion_constraint({{"structured_outputs", {{"json_object", false}}}}));
  EXPECT_FALSE(completion_constraint({{"guided_json", nullptr}}));
}

TEST(StructuredOutputRequest, MalformedFieldsAre400sNamingThem) {
  expect_400({{"response_format", "json"}}, "response_format", "must be an object");
  expect_400({{"response_format", {{"type", "xml"}}}}, "response_format.type", "xml");
  expect_400({{"response_format", {{"type", "json_schema"}}}}, "response_format.json_schema",
             "must be an object");
  expect_400({{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "n"}}}}}},
             "response_format.json_schema.schema", "is required");
  expect_400({{"response_format",
               {{"type", "json_schema"},
                {"json_schema", {{"schema", json::object()}, {"strict", "yes"}}}}}},
             "response_format.json_schema.strict", "must be a boolean");
  expect_400(
      {{"response_format",
        {{"type", "json_schema"}, {"json_schema", {{"schema", json::object()}, {"extra", 1}}}}}},
      "response_format.json_schema.extra", "Unrecognized");
  expect_400({{"response_format", {{"type", "json_object"}, {"schema", json::object()}}}},
             "response_format.schema", "Unrecognized");
  expect_400({{"structured_outputs", {{"xml", "a"}}}}, "structured_outputs.xml", "Unrecognized");
  expect_400({{"structured_outputs", {{"structural_tag", "{}"}}}},
             "structured_outputs.structural_tag", "not supported");
  expect_400({{"structured_outputs", {{"regex", 5}}}}, "structured_outputs.regex",
             "must be a string");
  expect_400({{"structured_outputs", {{"json", "{not json"}}}}, "structured_outputs.json",
             "not valid JSON");
  expect_400({{"structured_outputs", {{"json", 3}}}}, "structured_outputs.json", "JSON schema");
  expect_400({{"guided_choice", json::array()}}, "guided_choice", "non-empty array");
  expect_400({{"guided_choice", {"a", 1}}}, "guided_choice", "must be a string");
  expect_400({{"guided_whitespace_pattern", "\\s*"}}, "guided_whitespace_pattern", "not supported");
  expect_400({{"guided_json_schema", json::object()}}, "guided_json_schema", "Unrecognized");
}

TEST(StructuredOutputRequest, OneConstraintAtATime) {
  expect_400({{"guided_regex", "a"}, {"guided_choice", {"a"}}}, "guided_choice",
             "'guided_regex' and 'guided_choice' cannot both be given");
  expect_400({{"response_format", {{"type", "json_object"}}}, {"guided_json", json::object()}},
             "guided_json", "'response_format' and 'guided_json'");
  expect_400({{"structured_outputs", {{"regex", "a"}, {"grammar", "root ::= \"a\""}}}},
             "structured_outputs.grammar", "cannot both be given");
  expect_400({{"structured_outputs", {{"json_object", true}}}, {"guided_grammar", "x"}},
             "guided_grammar", "cannot both be given");
  // "text" is no constraint: it combines with one.
  const auto c = chat_constraint({{"response_format", {{"type", "text"}}}, {"guided_regex", "a"}});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->spec.kind, Kind::regex);
}

}  // namespace
}  // namespace dq4::server
