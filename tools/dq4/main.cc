// dq4: one command-line tool, one subcommand per job.

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>

#include "commands.h"
#include "dq4/kernels/error.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv, int first);
};

const Command kCommands[] = {
    {"info", "print the CPU features found and the kernels chosen", dq4::cli::run_info},
    {"inspect", "show a model directory's architecture, linear modules and their schemes",
     dq4::cli::run_inspect},
    {"quantize", "int4-quantize a model into a compressed-tensors W4A8/W4A16 checkpoint",
     dq4::cli::run_quantize},
    {"generate", "generate text from a prompt (streamed), then print the speeds",
     dq4::cli::run_generate},
    {"chat", "chat with a model in the terminal (its chat template, streamed)", dq4::cli::run_chat},
    {"perplexity", "a model's perplexity over a text file", dq4::cli::run_perplexity},
    {"synth", "write a synthetic Llama-shaped model (tests, benchmarks)", dq4::cli::run_synth},
    {"export-gguf", "write a model as a GGUF file for llama.cpp (int4 group-32 as Q4_0)",
     dq4::cli::run_export_gguf},
    {"chat-template", "render a model's chat template for a conversation (JSON on stdin)",
     dq4::cli::run_chat_template},
    {"tokenize", "tokenize stdin (or decode ids) with a model's tokenizer.json",
     dq4::cli::run_tokenize},
    {"serve", "serve a model over HTTP with OpenAI's API (completions, chat, metrics)",
     dq4::cli::run_serve},
    {"bench", "benchmarks (dq4 bench kernels: the W4A8 matmul kernels)", dq4::cli::run_bench},
};

void print_usage(std::FILE* out) {
  std::fputs(
      "usage: dq4 <command> [options]\n\ndq4: W4A8 (int4 weights x dynamic int8 activations) CPU "
      "inference.\n\ncommands:\n",
      out);
  for (const Command& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
  std::fputs("\nRun 'dq4 <command> --help' for a command's options.\n", out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_usage(stdout);
    return 0;
  }
  for (const Command& c : kCommands) {
    if (name != c.name) continue;
    try {
      return c.run(argc, argv, 2);
    } catch (const dq4::Error& e) {
      // Library errors may name the command themselves ("export-gguf: ..."); said once.
      std::string_view message = e.what();
      if (message.starts_with(name + ": ")) message.remove_prefix(name.size() + 2);
      std::fprintf(stderr, "dq4 %s: error: %.*s\n", c.name, static_cast<int>(message.size()),
                   message.data());
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "dq4 %s: internal error: %s\n", c.name, e.what());
      return 3;
    }
  }
  std::fprintf(stderr, "dq4: unknown command '%s'\n\n", name.c_str());
  print_usage(stderr);
  return 2;
}
