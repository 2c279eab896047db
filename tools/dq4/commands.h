#pragma once
// The dq4 subcommands. Each takes the full argv and the index of its first own argument and
// returns the process exit code; errors are thrown as dq4::Error and reported by main().

namespace dq4::cli {

int run_info(int argc, char** argv, int first);
int run_bench(int argc, char** argv, int first);
int run_inspect(int argc, char** argv, int first);
int run_quantize(int argc, char** argv, int first);
int run_synth(int argc, char** argv, int first);
int run_export_gguf(int argc, char** argv, int first);
int run_chat_template(int argc, char** argv, int first);
int run_tokenize(int argc, char** argv, int first);
int run_serve(int argc, char** argv, int first);
int run_generate(int argc, char** argv, int first);
int run_chat(int argc, char** argv, int first);
int run_perplexity(int argc, char** argv, int first);

}  // namespace dq4::cli
