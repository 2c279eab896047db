// dq4 bench <kind>: benchmarks. Each kind parses its own options.

#include <cstdio>
#include <string>

#include "bench/kernel_bench.h"
#include "bench/model_bench.h"
#include "bench/serve_bench_cli.h"
#include "bench/tokenizer_bench.h"
#include "commands.h"
#include "dq4/kernels/error.h"

namespace dq4::cli {
namespace {

struct Kind {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv, int first);
};

const Kind kKinds[] = {
    {"kernels",
     "W4A8 matmul kernels over Llama shapes vs read bandwidth, int8 peak and OpenBLAS f32",
     bench::run_kernel_bench},
    {"model", "a whole model: prompt and decode tokens/s vs bandwidth and int8-peak ceilings",
     bench::run_model_bench},
    {"tokenizer", "tokenizer encode MB/s on English and code, vs Hugging Face tokenizers",
     bench::run_tokenizer_bench},
    {"serve", "a running OpenAI-compatible server: TTFT, TPOT, ITL, tokens/s over concurrency",
     bench::run_serve_bench_cli},
};

void print_usage(std::FILE* out) {
  std::fputs("usage: dq4 bench <kind> [options]\n\nbenchmark kinds:\n", out);
  for (const Kind& k : kKinds) std::fprintf(out, "  %-10s %s\n", k.name, k.summary);
  std::fputs("\nRun 'dq4 bench <kind> --help' for a kind's options.\n", out);
}

}  // namespace

int run_bench(int argc, char** argv, int first) {
  if (first >= argc) throw Error("missing benchmark kind (see dq4 bench --help)");
  const std::string name = argv[first];
  if (name == "--help" || name == "-h") {
    print_usage(stdout);
    return 0;
  }
  for (const Kind& k : kKinds)
    if (name == k.name) return k.run(argc, argv, first + 1);
  std::string names;
  for (const Kind& k : kKinds) names += std::string(names.empty() ? "" : ", ") + k.name;
  throw Error("unknown benchmark kind '" + name + "' (kinds: " + names + ")");
}

}  // namespace dq4::cli
