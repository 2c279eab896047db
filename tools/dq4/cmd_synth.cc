// dq4 synth: synthetic Llama-shaped Hugging Face models for tests and benchmarks.

#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "dq4/error.h"
#include "dq4/synth.h"
#include "progress.h"

namespace dq4::cli {
namespace {

void declare_options(Args& args) {
  args.option("output", "DIR", "output directory (required)").short_name('o', "output");
  args.option("preset", "NAME", "llama-1b (Llama-3.2-1B shapes, BF16, ~2.5 GB) or tiny", "tiny");
  args.option("dtype", "TYPE", "bf16, f16 or f32 (default: the preset's)");
  args.option("layers", "N", "num_hidden_layers");
  args.option("hidden", "H", "hidden_size");
  args.option("intermediate", "I", "intermediate_size");
  args.option("heads", "A", "num_attention_heads");
  args.option("kv-heads", "B", "num_key_value_heads");
  args.option("head-dim", "D",
              "head_dim (default: hidden / heads when --hidden or --heads is given)");
  args.option("vocab", "V", "vocab_size");
  args.option("tie-embeddings", "BOOL", "tie_word_embeddings: true or false");
  args.option("seed", "S", "seed of the pseudo-random weights", "0");
  args.option("max-shard-size", "SIZE", "largest output file (5GB, 500MB, 2GiB...)", "5GB");
  args.option("tokenizer", "DIR", "copy the tokenizer files of DIR (else no tokenizer is written)");
  args.option("force", "", "replace an existing output directory");
}

Dtype dtype_option(const std::string& text) {
  if (text == "bf16") return Dtype::BF16;
  if (text == "f16") return Dtype::F16;
  if (text == "f32") return Dtype::F32;
  throw Error("option --dtype must be bf16, f16 or f32, got '" + text + "'");
}

void override_size(const Args& args, const char* option, int64_t& field) {
  if (args.value(option).empty()) return;
  field = args.integer(option);
  if (field <= 0)
    throw Error(std::string("option --") + option + " must be positive, got " +
                std::to_string(field));
}

}  // namespace

int run_synth(int argc, char** argv, int first) {
  Args args("synth",
            "Writes a synthetic Llama-shaped Hugging Face model (config.json, safetensors) with\n"
            "deterministic pseudo-random weights ~N(0, 0.02^2) and norms of 1, for tests and\n"
            "benchmarks. No tokenizer is written unless --tokenizer names one to copy.");
  declare_options(args);
  if (!args.parse(argc, argv, first)) return 0;
  if (args.value("output").empty()) throw Error("missing option --output (-o DIR)");

  SynthOptions options = synth_preset(args.value("preset"));
  ModelConfig& c = options.config;
  const bool reshaped = !args.value("hidden").empty() || !args.value("heads").empty();
  override_size(args, "layers", c.num_hidden_layers);
  override_size(args, "hidden", c.hidden_size);
  override_size(args, "intermediate", c.intermediate_size);
  override_size(args, "heads", c.num_attention_heads);
  override_size(args, "kv-heads", c.num_key_value_heads);
  override_size(args, "vocab", c.vocab_size);
  if (reshaped) c.head_dim = c.hidden_size / c.num_attention_heads;
  override_size(args, "head-dim", c.head_dim);
  if (c.head_dim <= 0) throw Error("option --heads is larger than --hidden: set --head-dim");
  if (!args.value("tie-embeddings").empty()) {
    const std::string tie = args.value("tie-embeddings");
    if (tie != "true" && tie != "false")
      throw Error("option --tie-embeddings must be true or false, got '" + tie + "'");
    c.tie_word_embeddings = tie == "true";
  }
  if (!args.value("dtype").empty()) options.dtype = dtype_option(args.value("dtype"));
  options.seed = static_cast<uint64_t>(args.integer("seed"));
  options.max_shard_bytes = parse_byte_size("max-shard-size", args.value("max-shard-size"));
  options.tokenizer_dir = args.value("tokenizer");
  options.replace_existing = args.flag("force");
  options.output_dir = args.value("output");

  ProgressBar bar("synth");
  options.progress = bar.callback();
  options.notice = stderr_notice();
  const SynthReport r = write_synthetic_model(options);
  const double seconds = r.seconds > 0 ? r.seconds : 1e-9;
  std::printf("wrote %s: %llu parameters in %lld tensors, %zu file%s, %s in %.2f s (%.1f MB/s)%s\n",
              r.output_dir.c_str(), static_cast<unsigned long long>(r.parameters),
              static_cast<long long>(r.tensors), r.shards, r.shards == 1 ? "" : "s",
              megabytes(r.bytes_written).c_str(), r.seconds, r.bytes_written / 1e6 / seconds,
              options.tokenizer_dir.empty() ? "; no tokenizer" : "");
  return 0;
}

}  // namespace dq4::cli
