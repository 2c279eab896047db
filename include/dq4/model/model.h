#pragma once
// A Llama-family causal language model (Llama 2/3.x, Mistral, Qwen2, Qwen3, and the mixtures of
// experts Qwen2-MoE, Qwen3-MoE, Mixtral, OLMoE) loaded from a Hugging Face directory, and its
// batched forward pass over a paged KV cache.
//
// forward() takes several sequences at once, each with any number of new tokens at its own
// positions (prefill chunks and single decode tokens mixed). Every Linear runs once over all rows,
// attention per sequence; logits only for the rows asked for. A row's result never depends on the
// other rows of the batch, on how its prompt was chunked, or on the number of threads.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dq4/io/model_config.h"
#include "dq4/kernels/attention.h"
#include "dq4/layers/linear.h"
#include "dq4/model/kv_cache.h"

namespace dq4 {

class ThreadPool;

// Load-time choices of `dq4 generate / chat / perplexity / serve / bench model`.
struct ModelOptions {
  LinearOptions linear;  // --activations int8, --quantize-dense
  // --quantize w4a8-ch | w4a8-g<G>: quantize the unquantized linear modules of a BF16/F16/F32
  // checkpoint to W4A8 at load (same RTN as `dq4 quantize`): nullopt = run them as stored, 0 =
  // channelwise, G = groups of G.
  std::optional<int64_t> quantize_group;
  // Called as layers are packed: (done, total) in linear modules.
  std::function<void(int64_t done, int64_t total)> progress;
};

// What loading cost: for the commands' reports.
struct LoadReport {
  double seconds = 0;
  size_t packed_bytes = 0;     // packed linear weights (head included)
  size_t embedding_bytes = 0;  // the embedding table (a copy, in the checkpoint's dtype)
  size_t other_bytes = 0;      // norms, biases, rope tables
  // Checkpoint tensors the model does not use (sorted; precomputed rotary tables left out): a
  // norm or module the architecture does not run, another model's part (a vision tower, a
  // multi-token prediction layer).
  std::vector<std::string> unused_tensors;
};

// What one token costs the forward pass: the work the ceilings of `dq4 bench model` divide by.
struct TokenCost {
  // Bytes of weights a decoded token reads: every packed linear layer (the head included; of a
  // mixture of experts, the experts one token is routed to), one
  // row of the embedding table, the norms and the rope table.
  size_t weight_bytes = 0;
  // Operations of the linear layers per token, 2 per multiply-add (the head included; attention's
  // scores and weighted sums left out).
  int64_t linear_ops = 0;
  // The head's share of linear_ops: a prompt computes it for its last token only.
  int64_t head_ops = 0;
  // Bytes of keys and values one position takes in the KV cache, over all layers: what the cache
  // grows by per token, and what attention reads per position of context.
  size_t kv_bytes = 0;
};

// One sequence's part of a forward batch.
struct SequenceInput {
  std::span<const int32_t> tokens;  // the new tokens
  int64_t start = 0;                // position of tokens[0]: tokens already in the KV cache
  // The sequence's blocks, covering positions [0, start + tokens.size()).
  std::span<const int32_t> block_table;
  enum class Logits { none, last, all } logits = Logits::last;
  // The sequence's whole length, by which longrope (Phi-3) chooses the factors of every row of
  // the call, as transformers does for a sequence run in one pass; 0: start + tokens.size(). The
  // caller keeps a sequence's cache computed with one set of factors (rope_switch_length()).
  int64_t length = 0;
};

class Model {
 public:
  // Reads config.json, the quantization config and the checkpoint in `dir`; throws dq4::Error
  // naming the file, tensor or config field at fault.
  static std::unique_ptr<Model> load(const std::string& dir, const ModelOptions& options = {},
                                     ThreadPool* pool = nullptr);
  ~Model();

  const ModelConfig& config() const;
  const LoadReport& load_report() const;
  int64_t vocab_size() const;
  int64_t max_context() const;  // max_position_embeddings, longer with yarn (Architecture)
  // longrope: a sequence longer than this runs the long factors at every position, a shorter one
  // the short factors; 0 for every other rope.
  int64_t rope_switch_length() const;
  // Token ids that end generation: config.json's and generation_config.json's eos_token_id.
  const std::vector<int32_t>& eos_ids() const;
  // The KV cache shape this model needs for `blocks` blocks of `block_size` tokens.
  KvCacheShape kv_shape(int64_t blocks, int64_t block_size = 16,
                        attention::KvType type = attention::KvType::f32) const;
  // What a token costs with a KV cache of `kv_type`.
  TokenCost cost_per_token(attention::KvType kv_type = attention::KvType::f32) const;
  // The output layer: lm_head, or the tied embedding table packed as one.
  const Linear& head() const;
  // One line per layer kind: what runs ("q+k+v: W4A8 g32 [avx512_vnni]", ...).
  std::vector<std::string> describe() const;

  // Runs the batch, writes the new tokens' keys and values into `cache` and the logits of the
  // rows asked for to `logits` ([rows, vocab_size], in batch order: one row per `last`
  // sequence, tokens.size() rows per `all` one). Throws dq4::Error for token ids outside the
  // vocabulary, positions past max_context() or block tables too short.
  void forward(std::span<const SequenceInput> batch, KvCache& cache, float* logits,
               ThreadPool* pool = nullptr);
  // Rows of logits forward() writes for `batch`.
  static int64_t logit_rows(std::span<const SequenceInput> batch);

  struct Impl;

 private:
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dq4
