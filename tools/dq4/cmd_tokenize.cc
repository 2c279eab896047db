// dq4 tokenize: a model's Hugging Face tokenizer on stdin, as JSON on stdout.

#include <cstdio>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "dq4/kernels/error.h"
#include "dq4/tokenizer/tokenizer.h"

namespace dq4::cli {
namespace {

std::vector<TokenId> parse_ids(const std::string& input) {
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(input);
  } catch (const nlohmann::json::exception&) {
    throw Error("stdin: not valid JSON (expected {\"ids\": [...]})");
  }
  if (!document.is_object() || !document.contains("ids") || !document["ids"].is_array())
    throw Error("stdin: expected a JSON object {\"ids\": [...]}");
  std::vector<TokenId> ids;
  for (const auto& id : document["ids"]) {
    if (!id.is_number_integer() || id.get<int64_t>() < INT32_MIN || id.get<int64_t>() > INT32_MAX)
      throw Error("stdin: ids[" + std::to_string(ids.size()) + "] is not a 32-bit integer: " +
                  (id.is_number() ? id.dump() : std::string("a JSON ") + id.type_name()));
    ids.push_back(static_cast<TokenId>(id.get<int64_t>()));
  }
  return ids;
}

}  // namespace

int run_tokenize(int argc, char** argv, int first) {
  Args args("tokenize",
            "Tokenizes all of stdin (UTF-8, exact bytes) with the model's tokenizer.json as\n"
            "Hugging Face tokenizers' encode() does, and prints {\"ids\": [...]}. Special tokens\n"
            "written in the text are matched; --add-special-tokens also applies the\n"
            "post-processor (e.g. a leading BOS). With --decode, reads {\"ids\": [...]} and\n"
            "prints {\"text\": \"...\"}.");
  args.option("tokenizer", "DIR", "model or tokenizer directory holding tokenizer.json")
      .short_name('t', "tokenizer")
      .option("add-special-tokens", "", "add the post-processor's special tokens (encode)")
      .option("decode", "", "decode {\"ids\": [...]} instead of encoding text")
      .option("skip-special-tokens", "", "leave special tokens out of the text (decode)");
  if (!args.parse(argc, argv, first)) return 0;
  const std::string dir = args.value("tokenizer");
  if (dir.empty()) throw Error("tokenize needs --tokenizer DIR (see --help)");
  const bool decode = args.flag("decode");
  if (decode && args.flag("add-special-tokens"))
    throw Error("--add-special-tokens applies to encoding, not to --decode");
  if (!decode && args.flag("skip-special-tokens"))
    throw Error("--skip-special-tokens applies to --decode only");

  const Tokenizer tokenizer = Tokenizer::from_directory(dir);
  const std::string input(std::istreambuf_iterator<char>(std::cin), {});
  nlohmann::json out;
  if (decode) {
    out["text"] = tokenizer.decode(parse_ids(input), args.flag("skip-special-tokens"));
  } else {
    out["ids"] = tokenizer.encode(input, args.flag("add-special-tokens"));
  }
  const std::string text = out.dump() + "\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace dq4::cli
