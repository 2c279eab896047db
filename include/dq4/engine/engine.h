#pragma once
// The serving engine: continuous batching of many requests over one paged KV cache.
//
// Requests arrive from any thread (add_request), each step of the engine's loop runs one
// Model::forward over a batch mixing decode tokens of running sequences and prefill chunks of new
// ones up to a token budget, samples every sequence that needs a token, and hands each request
// its new tokens and text through the request's callback. A library: no HTTP, no JSON; the
// server (and `dq4 generate`) are its users.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dq4/constrain/constraint.h"
#include "dq4/engine/sampler.h"
#include "dq4/engine/speculation.h"
#include "dq4/kernels/attention.h"
#include "dq4/kernels/error.h"
#include "dq4/model/kv_cache.h"
#include "dq4/model/model.h"
#include "dq4/tokenizer/tokenizer.h"

namespace dq4 {

class ThreadPool;

struct EngineOptions {
  int64_t max_num_seqs = 256;  // sequences (choices) in one step at most
  // Tokens (decode + prefill chunks) in one step at most; at least max_num_seqs. Every decoding
  // sequence waits for the whole step: on a CPU, where prefill runs at hundreds of tokens per
  // second, a 2048-token budget stalls them for seconds (docs/benchmarks.md, "Serving").
  int64_t max_num_batched_tokens = 512;
  int64_t block_size = 16;  // tokens per KV block
  // The KV pool: kv_blocks when > 0, else as many blocks as kv_cache_memory bytes hold.
  int64_t kv_blocks = 0;
  size_t kv_cache_memory = size_t{1} << 30;
  attention::KvType kv_type = attention::KvType::f32;
  // Maps the whole pool's pages up front, so that no step waits for page faults. Off: pages are
  // mapped as sequences first write them (one short conversation in a large context touches
  // little of it, and the process's resident memory says so).
  bool prefault_kv_cache = true;
  bool enable_prefix_caching = true;
  // Requests waiting for admission at most; add_request throws EngineOverloaded beyond it.
  int64_t max_waiting = 1024;
  // Prompt plus generated tokens at most; 0 = the model's max_context(), or what the KV pool
  // holds if that is less (a value set above the pool's size is an error).
  int64_t max_model_len = 0;
  // Speculative decoding (nullopt or num_speculative_tokens 0: none): every decoding sequence
  // proposes drafts that the step verifies. Outputs are the same either way under the default
  // acceptance (match); rejection sampling keeps their distribution, not their tokens.
  std::optional<SpeculativeConfig> speculative;
  // Decode rows of one step (each sequence's token and its drafts) beyond which sequences get
  // fewer drafts: a W4A8 layer costs about the same up to this many rows, more beyond (many
  // streams make the step compute-bound, where drafts no longer come free).
  int64_t speculative_row_budget = 16;
  // For tests: the loop thread (start()) calls this before each step and runs the step once it
  // returns. By blocking it holds the engine between steps while requests still arrive, wait
  // and are refused beyond max_waiting; stop() waits for it like for a step. Empty: none.
  std::function<void()> before_step;

  // Throws dq4::Error naming the option for a value out of range.
  void validate() const;
};

// One completion request: a prompt already tokenized and what to generate from it.
struct Request {
  std::vector<TokenId> prompt;  // not empty
  SamplingParams sampling;      // with n > 1 and a seed, choice i uses seed + i
  // Tokens generated per choice at most; nullopt = up to max_model_len.
  std::optional<int64_t> max_tokens;
  // Before this many tokens EOS and stop ids are never sampled and stop strings not looked for.
  int64_t min_tokens = 0;
  std::vector<std::string> stop;        // stop strings, matched on the detokenized text
  std::vector<TokenId> stop_token_ids;  // ends a choice like EOS (the token is not in the text)
  bool ignore_eos = false;              // keep going past the model's EOS ids
  bool include_stop_str_in_output = false;
  bool skip_special_tokens = true;  // of the detokenized text
  bool detokenize = true;           // false: token ids only, no text (and so no stop strings)
  int n = 1;                        // independent choices sharing the prompt
  // Per generated token: nullopt = no logprobs, k = the token's logprob and the k most likely
  // tokens' (k = 0: the token's only). With a constraint, of the masked distribution (the
  // logits' log-softmax with every token the constraint forbids at -infinity, as vLLM reports):
  // forbidden tokens never appear among the top.
  std::optional<int> logprobs;
  // false: this request's choices never draft, even when the engine speculates.
  bool speculate = true;

  // What the output must match (null: nothing). Each choice gets its own matcher; a token the
  // matcher forbids is never sampled, whatever the sampling parameters. A choice whose matcher
  // has ended finishes with stop (an EOS that ended it is a stop token, not text), even before
  // min_tokens, past ignore_eos and on the token that reaches max_tokens: the constraint wins.
  // Before min_tokens, EOS and stop ids are forbidden only while the constraint allows another
  // token. max_tokens reached before the constraint can end: length. Compiled for this model's
  // vocabulary (constrain::Compiler with its vocab_size and EOS ids).
  std::shared_ptr<const constrain::Constraint> constraint;
  // The constraint starts once a choice's generated tokens end with these (e.g. "</think>": the
  // schema constrains the answer, not the reasoning); until then sampling is unconstrained.
  // Matched on generated tokens only, never on the prompt. Empty: from the first token.
  std::vector<TokenId> constraint_after;

  // Throws dq4::Error naming the field for a value out of range (also done by add_request).
  void validate() const;
};

enum class FinishReason { stop, length, abort };
const char* to_string(FinishReason reason);  // "stop", "length", "abort"

struct TokenLogprobs {
  TokenLogprob chosen;            // the sampled token
  std::vector<TokenLogprob> top;  // the `logprobs` most likely, descending
};

// What one choice produced since its last event.
struct ChoiceDelta {
  int index = 0;                        // the choice, 0 .. n - 1
  std::vector<TokenId> token_ids;       // new tokens
  std::vector<TokenLogprobs> logprobs;  // one per new token when the request asked for them
  // New text: complete UTF-8 only, and never text that could still turn out to be part of a
  // stop string (held back until it cannot). Concatenated over all events: the choice's text.
  std::string text;
  std::optional<FinishReason> finish_reason;  // set on the choice's last delta
  // Why it stopped, when finish_reason is stop: the stop string matched, or the stop/EOS token.
  std::optional<std::string> stop_string;
  std::optional<TokenId> stop_token;
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;     // over all choices
  int64_t cached_prompt_tokens = 0;  // prompt tokens found in the prefix cache (not recomputed)
};

// One event for one request, delivered through its callback.
struct RequestOutput {
  uint64_t request_id = 0;
  std::vector<ChoiceDelta> choices;  // the choices with something new, in index order
  Usage usage;                       // totals so far
  bool finished = false;             // every choice has finished: this is the last event
  // Set (with finish_reason abort) when the engine failed to run the request's step: the server
  // answers 500 with it.
  std::optional<std::string> error;
};

// Called on the engine's thread, never concurrently for one request, never after the event
// with finished = true. Must return quickly (queue the event and let another thread write it):
// the whole engine waits for it. Must not throw. May call Engine::abort.
using OutputCallback = std::function<void(RequestOutput&&)>;

// add_request when the waiting queue is full: the server answers 429 / 503 with Retry-After.
class EngineOverloaded : public Error {
 public:
  using Error::Error;
};
// add_request after stop() began: the server answers 503.
class EngineStopped : public Error {
 public:
  using Error::Error;
};

// Prometheus-style histogram: cumulative counts per upper bound (le), plus +Inf = count.
struct Histogram {
  std::vector<double> upper_bounds;  // seconds, ascending
  std::vector<uint64_t> cumulative;  // cumulative[i]: observations <= upper_bounds[i]
  uint64_t count = 0;
  double sum = 0;
};

// A snapshot for /metrics. Counters only grow over the engine's life.
struct EngineStats {
  // Sequences (one per choice) being computed (some may be mid-prompt), and those queued or
  // preempted, not yet (re)admitted.
  int64_t running = 0;
  int64_t waiting = 0;
  int64_t kv_blocks_total = 0;
  int64_t kv_blocks_used = 0;  // held by sequences (cached blocks nobody holds count as free)
  double kv_usage = 0;         // kv_blocks_used / kv_blocks_total
  uint64_t prefix_cache_queries = 0;  // prompt tokens looked up in the prefix cache
  uint64_t prefix_cache_hits = 0;     // of which found
  uint64_t prompt_tokens = 0;         // prompt tokens of requests admitted
  uint64_t generation_tokens = 0;     // tokens generated
  uint64_t preemptions = 0;           // sequences sent back to waiting for lack of blocks
  uint64_t requests_finished_stop = 0, requests_finished_length = 0, requests_finished_abort = 0;
  Histogram time_to_first_token;    // arrival to first token, seconds
  Histogram time_per_output_token;  // (last - first token time) / (tokens - 1) per choice
  Histogram inter_token_latency;    // between consecutive tokens of a choice
  Histogram e2e_request_latency;    // arrival to finish
  Histogram queue_time;             // arrival to first scheduled
  SpeculationStats speculation;
};

// What the engine needs of a model: dq4::Model is the real one; tests supply a fake.
class EngineModel {
 public:
  virtual ~EngineModel() = default;
  virtual int64_t vocab_size() const = 0;
  virtual int64_t max_context() const = 0;
  virtual int64_t rope_switch_length() const { return 0; }  // Model::rope_switch_length()
  virtual const std::vector<TokenId>& eos_ids() const = 0;
  virtual KvCacheShape kv_shape(int64_t blocks, int64_t block_size,
                                attention::KvType type) const = 0;
  // Model::forward's contract.
  virtual void forward(std::span<const SequenceInput> batch, KvCache& cache, float* logits) = 0;
  // The threads forward() runs on; the engine samples a step's rows on them too. Null: the
  // process-wide pool.
  virtual ThreadPool* pool() const { return nullptr; }
};

class Engine {
 public:
  // `model`, `tokenizer` and `pool` must outlive the engine. Allocates the KV pool; throws
  // dq4::Error for bad options (or a pool too small to hold one sequence of one block).
  Engine(Model& model, const Tokenizer& tokenizer, const EngineOptions& options,
         ThreadPool* pool = nullptr);
  Engine(std::unique_ptr<EngineModel> model, const Tokenizer& tokenizer,
         const EngineOptions& options);
  ~Engine();  // stop(StopMode::abort) if still running
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Thread-safe. Queues the request and returns its id; outputs arrive through `on_output`.
  // Throws dq4::Error for an invalid request (empty prompt, token ids outside the vocabulary,
  // prompt + max_tokens longer than max_model_len, bad sampling values), EngineOverloaded when
  // max_waiting requests already wait, EngineStopped once stop() began.
  uint64_t add_request(Request request, OutputCallback on_output);
  // Thread-safe. Ends the request at the next step boundary: its blocks go back to the pool and
  // its callback gets a last event with finish_reason abort. Unknown or finished ids: no-op.
  void abort(uint64_t request_id);

  // The background loop: start() runs steps on its own thread while there is work.
  void start();
  enum class StopMode { finish, abort };
  // Refuses new requests, then finishes (or aborts) those in flight, then joins the loop.
  void stop(StopMode mode = StopMode::finish);

  // Without start(): runs one step on the calling thread; false when there was nothing to do.
  // (For tests and single-user tools; never while the loop thread runs.)
  bool step();
  bool has_unfinished() const;  // thread-safe

  EngineStats stats() const;             // thread-safe
  const EngineOptions& options() const;  // max_model_len resolved
  int64_t max_model_len() const;
  // The model's logits width and EOS ids: what a constrain::Compiler for its requests needs.
  int64_t vocab_size() const;
  const std::vector<TokenId>& eos_ids() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace dq4
