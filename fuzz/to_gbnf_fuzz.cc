// libFuzzer target: the converters to GBNF. The first byte picks one (JSON schema, regex, choice
// list split at newlines), the rest is its input. A conversion must either throw
// ConstraintError or give a grammar the layer's GBNF parser reads and compiles (a compile may only
// refuse it as too large); never crash, hang or run away with memory.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "byte_grammar.h"
#include "dq4/constrain/constraint.h"
#include "dq4/constrain/to_gbnf.h"
#include "gbnf_parser.h"

namespace {

std::vector<std::string> lines(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    out.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string grammar;
  try {
    switch (data[0] % 3) {
      case 0:
        grammar = dq4::constrain::json_schema_to_gbnf(input, "s-");
        break;
      case 1:
        grammar = dq4::constrain::regex_to_gbnf(input, "r-");
        break;
      default:
        grammar = dq4::constrain::choice_to_gbnf(lines(input), "c-");
        break;
    }
  } catch (const dq4::constrain::ConstraintError&) {
    return 0;
  }
  const char* root = data[0] % 3 == 0 ? "s-root" : data[0] % 3 == 1 ? "r-root" : "c-root";
  dq4::constrain::GbnfGrammar parsed;
  try {
    parsed = dq4::constrain::parse_gbnf(grammar);
  } catch (const dq4::constrain::ConstraintError&) {
    __builtin_trap();  // a converter wrote GBNF its own parser refuses
  }
  try {
    dq4::constrain::compile_grammar(parsed, grammar, root);
  } catch (const dq4::constrain::ConstraintError& e) {
    if (std::string_view(e.what()).find("too large") == std::string_view::npos) __builtin_trap();
  }
  return 0;
}
