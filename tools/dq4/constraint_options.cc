#include "constraint_options.h"

#include <string>
#include <vector>

#include "dq4/io/text_file.h"
#include "dq4/kernels/error.h"

namespace dq4::cli {

using Kind = constrain::ConstraintSpec::Kind;

void declare_constraint_options(Args& args) {
  args.option("json-schema", "FILE", "the output is JSON that this JSON Schema file accepts");
  args.option("regex", "RE", "the output matches this regular expression, whole");
  args.option("grammar", "FILE", "the output matches this grammar (llama.cpp's GBNF, rule root)");
  args.option("choice", "TEXT", "the output is exactly one of the --choice texts");
  args.repeatable("choice");
}

std::optional<constrain::ConstraintSpec> constraint_spec(const Args& args) {
  std::vector<std::string> given;
  for (const char* name : {"json-schema", "regex", "grammar"})
    if (args.given(name)) given.push_back(std::string("--") + name);
  const std::vector<std::string> choices = args.values("choice");
  if (!choices.empty()) given.push_back("--choice");
  if (given.empty()) return std::nullopt;
  if (given.size() > 1)
    throw Error("options " + given[0] + " and " + given[1] +
                ": one constraint on the output at a time");
  constrain::ConstraintSpec spec;
  if (args.given("json-schema")) {
    spec.kind = Kind::json_schema;
    spec.text = io::read_text_file(args.value("json-schema"), "option --json-schema");
  } else if (args.given("grammar")) {
    spec.kind = Kind::grammar;
    spec.text = io::read_text_file(args.value("grammar"), "option --grammar");
  } else if (args.given("regex")) {
    spec.kind = Kind::regex;
    spec.text = args.value("regex");
  } else {
    spec.kind = Kind::choice;
    spec.choices = choices;
  }
  return spec;
}

std::string constraint_source(const Args& args, const constrain::ConstraintSpec& spec) {
  switch (spec.kind) {
    case Kind::json_schema:
      return "option --json-schema " + args.value("json-schema");
    case Kind::grammar:
      return "option --grammar " + args.value("grammar");
    case Kind::regex:
      return "option --regex";
    default:
      return "option --choice";
  }
}

}  // namespace dq4::cli
