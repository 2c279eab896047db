// json_schema_to_gbnf: what the grammar accepts for each supported keyword, and the refusals,
// which name the keyword and its place in the schema.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dq4/constrain/constraint.h"
#include "dq4/constrain/to_gbnf.h"
#include "expect_error.h"
#include "gbnf_acceptor.h"

namespace dq4::constrain {
namespace {

using test::expect_error;
using test::GbnfAcceptor;

GbnfAcceptor schema(const std::string& json) { return GbnfAcceptor(json_schema_to_gbnf(json)); }

TEST(JsonSchemaGbnf, StrictModeObject) {
  auto g = schema(R"({"$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Person", "description": "ignored", "type": "object",
    "properties": {"name": {"type": "string", "description": "d", "examples": ["x"]},
                   "age": {"type": "integer", "default": 3}},
    "required": ["name", "age"], "additionalProperties": false})");
  EXPECT_TRUE(g.accepts(R"({"name": "Bob", "age": 42})"));
  EXPECT_TRUE(g.accepts("{\n  \"name\": \"B\\\"o\\u00e9b\",\n  \"age\": -7\n}"));
  EXPECT_FALSE(g.accepts(R"({"name": "Bob"})"));
  EXPECT_FALSE(g.accepts(R"({"age": 42, "name": "Bob"})"));  // the schema's order
  EXPECT_FALSE(g.accepts(R"({"name": "Bob", "age": 42, "x": 1})"));
  EXPECT_FALSE(g.accepts(R"({"name": "Bob", "age": 4.5})"));
  // The model's whitespace is bounded: one space, or a newline and up to 20 spaces.
  const std::string indent20 = "{\n" + std::string(20, ' ') + R"("name": "B", "age": 1} )";
  EXPECT_TRUE(g.accepts(indent20));
  EXPECT_FALSE(g.accepts("{\n " + indent20.substr(2)));
  EXPECT_FALSE(g.accepts(R"({"name":  "B", "age": 1})"));
  EXPECT_FALSE(g.accepts(R"({"name": "B", "age": 1}  )"));
}

TEST(JsonSchemaGbnf, OptionalPropertiesMayBeAbsent) {
  auto g = schema(R"({"type": "object", "properties": {"a": {"type": "integer"},
    "b": {"type": "integer"}, "c": {"type": "integer"}}, "required": ["b"]})");
  for (const char* ok :
       {R"({"b":1})", R"({"a":1,"b":2})", R"({"b":1,"c":3})", R"({"a":1, "b":2, "c":3})"}) {
    EXPECT_TRUE(g.accepts(ok)) << ok;
  }
  for (const char* bad :
       {"{}", R"({"a":1})", R"({"c":1,"b":1})", R"({"a":1,"c":1})", R"({"b":1,})", R"({,"b":1})"}) {
    EXPECT_FALSE(g.accepts(bad)) << bad;
  }
  auto none = schema(R"({"properties": {"a": {"type": "null"}, "c": {"type": "boolean"}}})");
  EXPECT_TRUE(none.accepts("{}"));
  EXPECT_TRUE(none.accepts(R"({"c": true})"));
  EXPECT_TRUE(none.accepts(R"({"a": null, "c": false})"));
  EXPECT_FALSE(none.accepts(R"({"b": 1})"));  // additionalProperties absent: none
}

TEST(JsonSchemaGbnf, AdditionalPropertiesNeverRepeatADeclaredName) {
  auto g = schema(R"({"type": "object", "properties": {"a": {"type": "integer"},
    "a\"b": {"type": "integer"}}, "additionalProperties": true})");
  EXPECT_TRUE(g.accepts(R"({"a": 1, "zz": [true]})"));
  EXPECT_TRUE(g.accepts(R"({"ab": "x"})"));
  EXPECT_TRUE(g.accepts(R"({"a": 1, "a\"": 2, "a\"bc": 3, "": 4})"));
  EXPECT_FALSE(g.accepts(R"({"a": 1, "a": 2})"));
  EXPECT_FALSE(g.accepts(R"({"a\"b": 1, "a\"b": 2})"));
  EXPECT_FALSE(g.accepts(R"({"zz": 1, "a": 2})"));  // declared ones come first
  auto free_form = schema(R"({"type": "object", "description": "any object"})");
  EXPECT_TRUE(free_form.accepts(R"({"x": [1, {"y": null}]})"));
  EXPECT_TRUE(free_form.accepts("{}"));
  EXPECT_FALSE(free_form.accepts("[]"));
  auto map = schema(R"({"type": "object", "additionalProperties": {"type": "integer"}})");
  EXPECT_TRUE(map.accepts(R"({"x": 1, "y": 2})"));
  EXPECT_FALSE(map.accepts(R"({"x": "s"})"));
}

TEST(JsonSchemaGbnf, ArraysWithBounds) {
  auto g =
      schema(R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})");
  EXPECT_TRUE(g.accepts("[1]"));
  EXPECT_TRUE(g.accepts("[1, 2, 3]"));
  EXPECT_FALSE(g.accepts("[]"));
  EXPECT_FALSE(g.accepts("[1,2,3,4]"));
  EXPECT_FALSE(g.accepts(R"(["a"])"));
  auto any = schema(R"({"type": "array"})");
  EXPECT_TRUE(any.accepts(R"([1, "a", {"b": null}, []])"));
  EXPECT_TRUE(any.accepts("[]"));
  auto empty = schema(R"({"type": "array", "items": false})");
  EXPECT_TRUE(empty.accepts("[]"));
  EXPECT_FALSE(empty.accepts("[1]"));
}

TEST(JsonSchemaGbnf, Tuples) {
  auto pair = schema(R"({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
    "items": false, "minItems": 2, "maxItems": 2})");
  EXPECT_TRUE(pair.accepts(R"([1, "a"])"));
  EXPECT_FALSE(pair.accepts(R"([1])"));
  EXPECT_FALSE(pair.accepts(R"([1, "a", 2])"));
  EXPECT_FALSE(pair.accepts(R"(["a", 1])"));
  auto open = schema(R"({"prefixItems": [{"const": "x"}], "items": {"type": "null"},
    "maxItems": 3})");
  EXPECT_TRUE(open.accepts(R"(["x"])"));
  EXPECT_TRUE(open.accepts(R"(["x", null, null])"));
  EXPECT_FALSE(open.accepts(R"(["x", null, null, null])"));
  EXPECT_FALSE(open.accepts(R"(["x", 1])"));
  auto draft7 = schema(R"({"type": "array", "items": [{"type": "boolean"}],
    "additionalItems": {"type": "integer"}, "minItems": 2})");
  EXPECT_TRUE(draft7.accepts("[true, 1]"));
  EXPECT_FALSE(draft7.accepts("[true]"));
  EXPECT_FALSE(draft7.accepts("[1, 1]"));
  expect_error(
      [] { json_schema_to_gbnf(R"({"prefixItems": [{}], "items": false, "minItems": 2})"); },
      "minItems");
}

TEST(JsonSchemaGbnf, EnumsConstsAndTypeLists) {
  auto colors = schema(R"({"type": "string", "enum": ["red", "gr\"een", "caf\u00e9", 3]})");
  EXPECT_TRUE(colors.accepts(R"("red")"));
  EXPECT_TRUE(colors.accepts(R"("gr\"een")"));
  EXPECT_TRUE(colors.accepts("\"caf\xC3\xA9\""));
  EXPECT_FALSE(colors.accepts("3"));  // not a string
  EXPECT_FALSE(colors.accepts(R"("blue")"));
  auto mixed = schema(R"({"enum": [1, "a", null, {"k": [true]}]})");
  for (const char* ok : {"1", R"("a")", "null", R"({"k":[true]})"}) {
    EXPECT_TRUE(mixed.accepts(ok)) << ok;
  }
  EXPECT_FALSE(mixed.accepts("2"));
  auto constant = schema(R"({"const": "x"})");
  EXPECT_TRUE(constant.accepts(R"("x")"));
  EXPECT_FALSE(constant.accepts(R"("y")"));
  auto nullable = schema(R"({"type": ["string", "null"]})");
  EXPECT_TRUE(nullable.accepts(R"("s")"));
  EXPECT_TRUE(nullable.accepts("null"));
  EXPECT_FALSE(nullable.accepts("1"));
}

TEST(JsonSchemaGbnf, AnyOfOneOfAndAllOfOfOne) {
  auto g = schema(R"({"anyOf": [{"type": "integer"}, {"type": "boolean"}], "title": "t"})");
  EXPECT_TRUE(g.accepts("12"));
  EXPECT_TRUE(g.accepts("false"));
  EXPECT_FALSE(g.accepts(R"("x")"));
  auto one = schema(R"({"oneOf": [{"const": 1}, {"const": "a"}]})");
  EXPECT_TRUE(one.accepts(R"("a")"));
  EXPECT_FALSE(one.accepts("2"));
  auto all = schema(R"({"allOf": [{"type": "null"}], "description": "d"})");
  EXPECT_TRUE(all.accepts("null"));
}

TEST(JsonSchemaGbnf, ScalarsAndNumbers) {
  auto number = schema(R"({"type": "number"})");
  for (const char* ok : {"0", "-0.25", "1.5e3", "12E-2", "7"})
    EXPECT_TRUE(number.accepts(ok)) << ok;
  for (const char* bad : {"01", "1.", ".5", "+1", "1e", "NaN"}) {
    EXPECT_FALSE(number.accepts(bad)) << bad;
  }
  auto boolean = schema(R"({"type": "boolean"})");
  EXPECT_TRUE(boolean.accepts("true"));
  EXPECT_FALSE(boolean.accepts("1"));
  auto anything = schema("true");
  EXPECT_TRUE(anything.accepts(R"([{"a": 1}])"));
}

TEST(JsonSchemaGbnf, IntegerBounds) {
  auto g = schema(R"({"type": "integer", "minimum": -15, "maximum": 123})");
  for (int v : {-15, -9, -1, 0, 5, 10, 99, 100, 119, 123}) {
    EXPECT_TRUE(g.accepts(std::to_string(v))) << v;
  }
  for (int v : {-16, -20, -100, 124, 130, 200, 1000})
    EXPECT_FALSE(g.accepts(std::to_string(v))) << v;
  EXPECT_FALSE(g.accepts("-0"));
  EXPECT_FALSE(g.accepts("007"));
  auto exclusive = schema(R"({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10})");
  EXPECT_TRUE(exclusive.accepts("1"));
  EXPECT_TRUE(exclusive.accepts("9"));
  EXPECT_FALSE(exclusive.accepts("0"));
  EXPECT_FALSE(exclusive.accepts("10"));
  auto positive = schema(R"({"type": "integer", "minimum": 1})");
  EXPECT_TRUE(positive.accepts("9999999999999999"));
  EXPECT_FALSE(positive.accepts("0"));
  EXPECT_FALSE(positive.accepts("-3"));
  expect_error([] { json_schema_to_gbnf(R"({"type": "integer", "minimum": 5, "maximum": 4})"); },
               "no integer");
}

TEST(JsonSchemaGbnf, NumberBounds) {
  auto unit = schema(R"({"type": "number", "minimum": 0, "maximum": 1})");
  for (const char* ok : {"0", "0.5", "0.999", "1"}) EXPECT_TRUE(unit.accepts(ok)) << ok;
  for (const char* bad : {"1.5", "-0.1", "2", "1e0"}) EXPECT_FALSE(unit.accepts(bad)) << bad;
  auto positive = schema(R"({"type": "number", "exclusiveMinimum": 0})");
  for (const char* ok : {"0.001", "3", "12345.5"}) EXPECT_TRUE(positive.accepts(ok)) << ok;
  for (const char* bad : {"0", "0.0", "-1", "-0.5"}) EXPECT_FALSE(positive.accepts(bad)) << bad;
  auto negative = schema(R"({"type": "number", "minimum": -10, "exclusiveMaximum": -2})");
  for (const char* ok : {"-2.5", "-9.75", "-10", "-3"}) EXPECT_TRUE(negative.accepts(ok)) << ok;
  for (const char* bad : {"-2", "-1.5", "-10.5", "0", "5"}) {
    EXPECT_FALSE(negative.accepts(bad)) << bad;
  }
  auto around = schema(R"({"minimum": -1, "maximum": 1})");  // type implied: number
  for (const char* ok : {"-1", "-0.5", "0", "0.25", "1"}) EXPECT_TRUE(around.accepts(ok)) << ok;
  for (const char* bad : {"-1.5", "1.5", "-2"}) EXPECT_FALSE(around.accepts(bad)) << bad;
  // A bound at 0 on one side: the positive side is the one number 0.
  auto up_to_zero = schema(R"({"type": "number", "minimum": -3, "maximum": 0})");
  for (const char* ok : {"-3", "-0.5", "0"}) EXPECT_TRUE(up_to_zero.accepts(ok)) << ok;
  for (const char* bad : {"0.5", "-3.5", "1"}) EXPECT_FALSE(up_to_zero.accepts(bad)) << bad;
  auto from_five = schema(R"({"type": "number", "minimum": 5, "maximum": 5})");
  EXPECT_TRUE(from_five.accepts("5"));
  EXPECT_FALSE(from_five.accepts("5.5"));
  expect_error([] { json_schema_to_gbnf(R"({"type": "number", "minimum": 0.5})"); },
               {"'minimum'", "not an integer"});
  expect_error(
      [] { json_schema_to_gbnf(R"({"type": "number", "minimum": 1, "exclusiveMaximum": 1})"); },
      "no number");
}

TEST(JsonSchemaGbnf, StringLengthsPatternsAndFormats) {
  auto length = schema(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  EXPECT_TRUE(length.accepts("\"\xC3\xA9\xC3\xA9\""));  // code points, not bytes
  EXPECT_TRUE(length.accepts(R"("\n\u0041b")"));        // an escape is one character
  EXPECT_FALSE(length.accepts("\"\xC3\xA9\""));
  EXPECT_FALSE(length.accepts(R"("abcd")"));
  auto pattern = schema(R"({"type": "string", "pattern": "^[a-z]+\\d\"\\.$"})");
  EXPECT_TRUE(pattern.accepts(R"("abc1\".")"));
  EXPECT_FALSE(pattern.accepts(R"("abc1".")"));
  EXPECT_FALSE(pattern.accepts(R"("abc\".")"));
  auto any_char = schema(R"({"type": "string", "pattern": "^.{2}$"})");
  EXPECT_TRUE(any_char.accepts(R"("\t\\")"));  // controls written as JSON escapes
  EXPECT_FALSE(any_char.accepts(R"("\n\\")"));
  auto date = schema(R"({"type": "string", "format": "date"})");
  EXPECT_TRUE(date.accepts(R"("2024-12-31")"));
  EXPECT_FALSE(date.accepts(R"("2024-02-30")"));
  EXPECT_FALSE(date.accepts(R"("2024-13-01")"));
  auto stamp = schema(R"({"format": "date-time"})");
  EXPECT_TRUE(stamp.accepts(R"("2024-06-01T12:30:00.5Z")"));
  EXPECT_TRUE(stamp.accepts(R"("2024-06-01T23:59:59+02:00")"));
  EXPECT_FALSE(stamp.accepts(R"("2024-06-01 12:30:00")"));
  auto uuid = schema(R"({"type": "string", "format": "uuid"})");
  EXPECT_TRUE(uuid.accepts(R"("123e4567-e89b-12d3-a456-426614174000")"));
  EXPECT_FALSE(uuid.accepts(R"("123e4567")"));
  auto email = schema(R"({"type": "string", "format": "email"})");
  EXPECT_TRUE(email.accepts(R"("first.last+tag@mail.example-1.com")"));
  EXPECT_FALSE(email.accepts(R"("a..b@example.com")"));
  EXPECT_FALSE(email.accepts(R"("a@-example.com")"));
  EXPECT_FALSE(email.accepts(R"("a@example")"));
  auto ip = schema(R"({"type": "string", "format": "ipv4"})");
  EXPECT_TRUE(ip.accepts(R"("192.168.0.255")"));
  EXPECT_FALSE(ip.accepts(R"("192.168.0.256")"));
  EXPECT_FALSE(ip.accepts(R"("01.2.3.4")"));
}

TEST(JsonSchemaGbnf, HostnameIpv6AndDurationFormats) {
  const auto quoted = [](const std::string& text) { return "\"" + text + "\""; };
  auto host = schema(R"({"type": "string", "format": "hostname"})");
  for (const std::string& ok :
       std::vector<std::string>{"localhost", "example.com", "a-b.c0.D.e", std::string(61, 'x')})
    EXPECT_TRUE(host.accepts(quoted(ok))) << ok;
  for (const std::string& bad : std::vector<std::string>{"", "-a.com", "a-.com", "a..b", "a_b.com",
                                                         "a.b.c.d.e", "a.", std::string(62, 'x')})
    EXPECT_FALSE(host.accepts(quoted(bad))) << bad;
  auto ipv6 = schema(R"({"type": "string", "format": "ipv6"})");
  for (const char* ok : {"::", "::1", "1::", "2001:db8::1", "fe80::1:2:3:4:5:6", "1:2:3:4:5:6:7:8",
                         "1:2:3:4:5:6:1.2.3.4", "::ffff:192.0.2.1", "1:2:3:4:5:6:7::",
                         "::2:3:4:5:6:7:8", "ABCD:ef01::", "1::1.2.3.4", "1:2:3:4:5::1.2.3.4"})
    EXPECT_TRUE(ipv6.accepts(quoted(ok))) << ok;
  for (const char* bad : {"1:2:3:4:5:6:7:8:9", "1::2::3", "12345::", ":1", "1:2:3:4:5:6:7",
                          "1:2:3:4:5:6:7:8::", "1.2.3.4", "::1.2.3", "g::", "1:2:3:4:5:6:7:1.2.3.4",
                          "::1:2:3:4:5:6:7:8", "1:::2", "::256.1.1.1"})
    EXPECT_FALSE(ipv6.accepts(quoted(bad))) << bad;
  auto duration = schema(R"({"type": "string", "format": "duration"})");
  for (const char* ok :
       {"P1Y", "P1Y2M3DT4H5M6S", "P2W", "PT5M", "P3D", "P1M", "PT1H30M", "P1YT1S", "P123456789D"})
    EXPECT_TRUE(duration.accepts(quoted(ok))) << ok;
  for (const char* bad :
       {"P", "PT", "P1", "1Y", "P1S", "PT1D", "P1W2D", "P1Y3D", "PT1H5S", "P1234567890D"})
    EXPECT_FALSE(duration.accepts(quoted(bad))) << bad;
}

TEST(JsonSchemaGbnf, RecursiveReferences) {
  auto tree = schema(R"({"$defs": {"node": {"type": "object",
      "properties": {"value": {"type": "integer"},
                     "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
      "required": ["value", "children"], "additionalProperties": false}},
    "$ref": "#/$defs/node"})");
  EXPECT_TRUE(tree.accepts(R"({"value": 1, "children": []})"));
  EXPECT_TRUE(tree.accepts(
      R"({"value": 1, "children": [{"value": 2, "children": [{"value": 3, "children": []}]}]})"));
  EXPECT_FALSE(tree.accepts(R"({"value": 1, "children": [{"value": 2}]})"));
  auto list = schema(R"({"definitions": {"list": {"anyOf": [{"type": "null"},
      {"type": "object", "properties": {"next": {"$ref": "#/definitions/list"}},
       "required": ["next"]}]}}, "type": "object",
    "properties": {"head": {"$ref": "#/definitions/list"}}, "required": ["head"]})");
  EXPECT_TRUE(list.accepts(R"({"head": {"next": {"next": null}}})"));
  auto root = schema(R"({"type": "array", "items": {"$ref": "#"}, "maxItems": 2})");
  EXPECT_TRUE(root.accepts("[[], [[]]]"));
  EXPECT_FALSE(root.accepts("[1]"));
}

TEST(JsonSchemaGbnf, RefusesRecursionThatWritesNothing) {
  expect_error([] { json_schema_to_gbnf(R"({"$ref": "#"})"); }, "$ref recursion");
  expect_error(
      [] {
        json_schema_to_gbnf(R"({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/b"}, {"type": "null"}]},
          "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"})");
      },
      {"$ref recursion", "#/$defs/a", "#/$defs/b"});
  expect_error([] { json_schema_to_gbnf(R"({"$ref": "#/$defs/missing"})"); },
               {"names nothing", "#/$ref"});
  expect_error([] { json_schema_to_gbnf(R"({"$ref": "other.json#/a"})"); }, "outside this schema");
}

TEST(JsonSchemaGbnf, RefusesUnsupportedKeywordsNamingThemAndTheirPlace) {
  struct Case {
    const char* schema;
    const char* keyword;
    const char* path;
  };
  const Case cases[] = {
      {R"({"properties": {"x": {"not": {"type": "null"}}}})", "'not'", "#/properties/x"},
      {R"({"if": {}, "then": {}})", "'if'", "at #"},
      {R"({"type": "object", "patternProperties": {"a": {}}})", "'patternProperties'", "at #"},
      {R"({"type": "array", "uniqueItems": true})", "'uniqueItems'", "at #"},
      {R"({"type": "array", "items": {"multipleOf": 2}})", "'multipleOf'", "#/items"},
      {R"({"allOf": [{"type": "object"}, {"required": ["a"]}]})", "allOf", "#/allOf"},
      {R"({"type": "string", "format": "uri"})", "format 'uri'", "#/format"},
      {R"({"type": "number", "maximum": 2.5})", "'maximum'", "at #"},
      {R"({"type": "object", "anyOf": [{}]})", "'type' beside 'anyOf'", "at #"},
      {R"({"type": "object", "dependentSchemas": {}})", "'dependentSchemas'", "at #"},
      {R"({"type": "object", "required": ["a"]})", "required property 'a'", "#/required"},
      {R"({"type": "string", "maxLength": 5000})", "'maxLength' above", "at #"},
      {R"({"anyOf": [{"type": "strin"}]})", "unknown type", "#/anyOf/0/type"},
      {R"({"type": "string", "pattern": "(a)\\1"})", "backreference", "#/pattern"},
      {"false", "schema false", "at #"},
  };
  for (const auto& c : cases) {
    expect_error([&] { json_schema_to_gbnf(c.schema); }, {c.keyword, c.path});
  }
}

TEST(JsonSchemaGbnf, BadJsonAndHostileNestingAreErrors) {
  expect_error([] { json_schema_to_gbnf(R"({"type": })"); }, {"not valid JSON", "byte 10"});
  expect_error([] { json_schema_to_gbnf(""); }, "not valid JSON");
  expect_error([] { json_schema_to_gbnf("-24444e44444"); }, "not valid JSON");  // out of range
  expect_error([] { json_schema_to_gbnf(std::string(100000, '[')); }, "nested deeper");
  std::string deep = R"({"type": "string"})";
  for (int i = 0; i < 120; ++i) deep = R"({"type": "array", "items": )" + deep + "}";
  EXPECT_NO_THROW(json_schema_to_gbnf(deep));
  std::string deeper = R"({"$defs": {)";
  for (int i = 0; i < 300; ++i) {
    deeper += "\"d" + std::to_string(i) + R"(": {"type": "array", "items": {"$ref": "#/$defs/d)" +
              std::to_string(i + 1) + "\"}},";
  }
  deeper += R"("d300": {"type": "null"}}, "$ref": "#/$defs/d0"})";
  expect_error([&] { json_schema_to_gbnf(deeper); }, "nested deeper");
}

TEST(JsonSchemaGbnf, PrefixedRules) {
  const std::string text = json_schema_to_gbnf(R"({"type": "object", "properties":
    {"a": {"type": "string"}}, "required": ["a"]})",
                                               "tool0-");
  for (size_t line = 0; line < text.size(); line = text.find('\n', line) + 1) {
    EXPECT_EQ(text.compare(line, 6, "tool0-"), 0) << text;
  }
  GbnfAcceptor g(text, "tool0-root");
  EXPECT_TRUE(g.accepts(R"({"a": "x"})"));
}

}  // namespace
}  // namespace dq4::constrain
