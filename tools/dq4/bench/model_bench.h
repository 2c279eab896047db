#pragma once
// `dq4 bench model`: prompt processing and decode of a whole model, against the machine's read
// bandwidth (decode) and int8 peak (prefill) measured in the same run.

namespace dq4::cli::bench {

int run_model_bench(int argc, char** argv, int first);

}  // namespace dq4::cli::bench
