#pragma once
// `dq4 synth`: synthetic Llama-shaped Hugging Face models for tests and benchmarks. Weights are
// deterministic pseudo-random values of a counter-based generator keyed by (seed, tensor name,
// element index), so any tensor can be produced in pieces, in parallel, in any order; linear and
// embedding weights are ~N(0, 0.02^2) (a sum of four uniforms), norm weights are 1. Written as a
// stream into a staging directory renamed into place at the end. No tokenizer is written unless
// one is copied from tokenizer_dir.

#include <cstdint>
#include <string>
#include <string_view>

#include "dq4/checkpoint_writer.h"
#include "dq4/model_config.h"
#include "dq4/quantize.h"
#include "dq4/tensor_view.h"

namespace dq4 {

struct SynthOptions {
  std::string output_dir;
  ModelConfig config;         // shapes, rope_theta, rms_norm_eps, tie_word_embeddings...
  Dtype dtype = Dtype::BF16;  // F32, BF16 or F16; also config.json's torch_dtype
  int64_t bos_token_id = 1, eos_token_id = 2;
  uint64_t seed = 0;
  uint64_t max_shard_bytes = kDefaultMaxShardBytes;
  std::string tokenizer_dir;  // optional: tokenizer files copied from here
  bool replace_existing = false;
  ProgressCallback progress;  // optional, called as the tensors are written
  // Optional: told about each staging folder of output_dir left by a killed run and removed.
  NoticeCallback notice;
};

// "llama-1b": Llama-3.2-1B shapes (hidden 2048, intermediate 8192, 16 layers, 32 heads, 8 KV heads,
// head_dim 64, vocab 128256, tied embeddings, rope_theta 500000, BF16; about 2.5 GB).
// "tiny": hidden 96, intermediate 200 (K = 200 of down_proj: a partial last group of 32, rows not
// a whole number of packed words), 2 layers, 4 heads, 2 KV heads, vocab 256, untied lm_head.
// Throws dq4::Error for another name.
SynthOptions synth_preset(std::string_view name);

struct SynthReport {
  std::string output_dir;
  int64_t tensors = 0;
  size_t shards = 0;
  uint64_t parameters = 0;
  uint64_t bytes_written = 0;  // files, headers and config included
  double seconds = 0;
};

// Throws dq4::Error for invalid shapes or dtype, or an existing output directory without
// replace_existing.
SynthReport write_synthetic_model(const SynthOptions& options);

// Element `index` of the synthetic tensor `name` (what write_synthetic_model stores, before
// rounding to the dtype): for tests.
float synthetic_value(uint64_t seed, std::string_view name, uint64_t index);

}  // namespace dq4
