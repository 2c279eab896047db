// Token mask cost of constrained decoding on real vocabularies: for each tokenizer and constraint
// kind, a valid output is tokenized and stepped through by fresh matchers (as each request gets
// one); every step times fill_mask (thread CPU time). Reports the compile time and the mean and
// 99th percentile of the mask time per token: of the first sequence (every state new) and of the
// later ones (the same output again, with the constraint's automaton and masks already built).
//
//   constrain_bench [fixtures dir (default $DQ4_FIXTURES)] [rounds (default 5)]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "dq4/constrain/constraint.h"
#include "dq4/tokenizer/tokenizer.h"

namespace {

using dq4::TokenId;
using dq4::Tokenizer;
using dq4::constrain::ConstraintSpec;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The calling thread's CPU time: a mask step is single-threaded, and on a shared machine wall
// time also counts the time other processes hold the core.
double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

// "mean M ms p99 P ms" of per-token mask times.
std::string summary(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  double sum = 0;
  for (const double t : times) sum += t;
  const double p99 = times[std::min(times.size() - 1, times.size() * 99 / 100)];
  char text[96];
  std::snprintf(text, sizeof text, "mean %.4f ms p99 %.4f ms",
                sum / static_cast<double>(times.size()), p99);
  return text;
}

struct Case {
  const char* name;
  ConstraintSpec spec;
  std::string text;  // an output the constraint accepts
};

std::string people_json() {
  std::string out = "[";
  const char* names[] = {"Ada Lovelace",    "Grace Hopper",   "Alan Turing",
                         "Edsger Dijkstra", "Barbara Liskov", "Donald Knuth"};
  for (int i = 0; i < 6; ++i) {
    if (i > 0) out += ", ";
    out += "{\"name\": \"" + std::string(names[i]) + "\", \"age\": " + std::to_string(36 + 7 * i) +
           ", \"email\": \"person" + std::to_string(i) +
           "@example.org\", \"tags\": [\"science\", \"computing\"], \"active\": " +
           (i % 2 ? "true" : "false") + "}";
  }
  return out + "]";
}

std::vector<Case> cases() {
  const std::string schema = R"({"type": "array", "items": {"type": "object", "properties": {
      "name": {"type": "string"}, "age": {"type": "integer"}, "email": {"type": "string"},
      "tags": {"type": "array", "items": {"type": "string"}}, "active": {"type": "boolean"}},
      "required": ["name", "age", "email", "tags", "active"], "additionalProperties": false}})";
  const std::string json_gbnf = R"(root   ::= value
value  ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ws ( member ( ws "," ws member )* ws )? "}"
member ::= string ws ":" ws value
array  ::= "[" ws ( value ( ws "," ws value )* ws )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t\n]{0,20}
)";
  std::string addresses;
  for (int i = 0; i < 8; ++i)
    addresses += (i ? "; " : "") + std::string("Springfield Falls ") + std::to_string(100 + i) +
                 " Main Street, " + std::to_string(12345 + i) + "-6789 (US)";
  const std::string regex =
      R"(([A-Z][a-z]+ )+[0-9]+ [A-Z][a-z]+ Street, [0-9]{5}(-[0-9]{4})? \((US|CA|MX)\)(; ([A-Z][a-z]+ )+[0-9]+ [A-Z][a-z]+ Street, [0-9]{5}(-[0-9]{4})? \((US|CA|MX)\))*)";
  std::vector<Case> out;
  out.push_back({"json_schema", {ConstraintSpec::Kind::json_schema, schema, {}}, people_json()});
  out.push_back({"json_object",
                 {ConstraintSpec::Kind::json_object, "", {}},
                 "{\"people\": " + people_json() + "}"});
  out.push_back(
      {"grammar (JSON GBNF)", {ConstraintSpec::Kind::grammar, json_gbnf, {}}, people_json()});
  out.push_back({"regex", {ConstraintSpec::Kind::regex, regex, {}}, addresses});
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const char* env = std::getenv("DQ4_FIXTURES");
  const std::string fixtures = argc > 1 ? argv[1] : env ? env : "";
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  if (fixtures.empty() || rounds < 1) {
    std::fprintf(stderr, "usage: constrain_bench FIXTURES_DIR [ROUNDS]\n");
    return 2;
  }
  try {
    for (const char* name : {"tokenizer-llama3", "tokenizer-qwen3"}) {
      const Tokenizer tokenizer = Tokenizer::from_directory(fixtures + "/" + name);
      const auto vocab_size = static_cast<int64_t>(tokenizer.vocab_size());
      auto start = Clock::now();
      dq4::constrain::Compiler compiler(tokenizer, vocab_size, {tokenizer.eos_id().value()});
      std::printf("%s: %lld tokens, vocabulary indexed in %.1f ms\n", name,
                  static_cast<long long>(vocab_size), ms_since(start));
      std::vector<uint64_t> mask(static_cast<size_t>((vocab_size + 63) / 64));
      for (const Case& c : cases()) {
        start = Clock::now();
        const auto constraint = compiler.compile(c.spec);
        const double compile_ms = ms_since(start);
        const std::vector<TokenId> ids = tokenizer.encode(c.text);
        // The first sequence meets every state first; later ones share its automaton and masks.
        std::vector<double> first, later;
        for (int r = 0; r < rounds; ++r) {
          auto matcher = constraint->matcher();
          for (size_t i = 0; i <= ids.size(); ++i) {
            const double before = thread_cpu_ms();
            matcher->fill_mask(mask);
            (r == 0 ? first : later).push_back(thread_cpu_ms() - before);
            const TokenId next = i < ids.size() ? ids[i] : tokenizer.eos_id().value();
            if (!((mask[static_cast<size_t>(next) / 64] >> (next % 64)) & 1) ||
                !matcher->accept(next)) {
              std::fprintf(stderr, "%s: token %zu (%d) refused\n", c.name, i, next);
              return 1;
            }
          }
        }
        std::printf("  %-20s compile %6.2f ms  %4zu tokens  first sequence: %s", c.name, compile_ms,
                    ids.size() + 1, summary(first).c_str());
        std::printf("  later: %s\n", later.empty() ? "-" : summary(later).c_str());
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "constrain_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
