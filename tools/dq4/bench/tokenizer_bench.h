#pragma once

namespace dq4::cli::bench {

// dq4 bench tokenizer -t DIR [options]: encode throughput of dq4's tokenizer on English text and
// on C++ source, side by side with Hugging Face tokenizers (npm, run by node) on the same text.
int run_tokenizer_bench(int argc, char** argv, int first);

}  // namespace dq4::cli::bench
