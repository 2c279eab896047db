#include "dq4/engine/engine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "block_manager.h"
#include "choice_text.h"
#include "dq4/kernels/thread_pool.h"
#include "histogram.h"
#include "scheduler.h"
#include "sequence.h"
#include "speculator.h"
#include "token_mask.h"

namespace dq4 {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

SamplingParams choice_sampling(const SamplingParams& params, int index) {
  SamplingParams p = params;
  if (p.seed) *p.seed += static_cast<uint64_t>(index);
  return p;
}

}  // namespace

// The engine's own records of a request and its choices (named, not anonymous: Engine::Impl
// holds them).
namespace engine {

struct Choice {
  Choice(const Tokenizer& tokenizer, const Request& request, uint64_t request_id, int index,
         const EngineOptions& options, int64_t vocab, const Speculator* speculator)
      : sampler(choice_sampling(request.sampling, index)),
        text(tokenizer, request.prompt, request.skip_special_tokens, request.stop,
             request.include_stop_str_in_output) {
    seq.request_id = request_id;
    seq.choice = index;
    // Room for every token the choice may reach, so that its decode steps never grow these.
    const auto prompt = static_cast<int64_t>(request.prompt.size());
    capacity = std::min(options.max_model_len,
                        prompt + request.max_tokens.value_or(options.max_model_len));
    const int64_t blocks = (capacity + options.block_size - 1) / options.block_size;
    seq.tokens.reserve(static_cast<size_t>(capacity));
    seq.tokens.assign(request.prompt.begin(), request.prompt.end());
    seq.blocks.blocks.reserve(static_cast<size_t>(blocks));
    seq.blocks.hashes.reserve(static_cast<size_t>(blocks));
    seq.prompt_len = prompt;
    // A constrained choice never drafts: each draft would need its own mask, and the matcher
    // advanced through the drafts and rolled back past the rejected ones.
    if (speculator != nullptr && request.speculate && !request.constraint) {
      draft = speculator->make_state(choice_sampling(request.sampling, index));
      seq.drafts.reserve(static_cast<size_t>(speculator->max_drafts()));
    }
    delta.index = index;
    if (request.constraint) {
      matcher = request.constraint->matcher();
      if (matcher->vocab_size() != vocab)
        throw Error("request: the constraint was compiled for " +
                    std::to_string(matcher->vocab_size()) + " tokens, the model has " +
                    std::to_string(vocab));
      mask.resize(static_cast<size_t>((vocab + 63) / 64));
      constrained = request.constraint_after.empty();
    }
  }
  // The next event's delta starts empty, keeping the buffers it has.
  void clear_delta() {
    delta.index = seq.choice;
    delta.token_ids.clear();
    delta.logprobs.clear();
    delta.text.clear();
    delta.finish_reason.reset();
    delta.stop_string.reset();
    delta.stop_token.reset();
  }
  int64_t generated() const { return static_cast<int64_t>(seq.tokens.size()) - seq.prompt_len; }

  engine::Sequence seq;
  int64_t capacity = 0;  // tokens the choice may reach
  Sampler sampler;
  std::unique_ptr<engine::DraftState> draft;  // null: never drafts
  engine::ChoiceText text;
  ChoiceDelta delta;  // what the request's next event carries for this choice
  bool changed = false;
  bool finished = false;
  Clock::time_point first_token, last_token;
  // The request's constraint, when it has one: this choice's position in it, and the buffer its
  // mask is written to (sized once: a step allocates nothing). `constrained` once the tokens of
  // constraint_after have come out (at once without them).
  std::unique_ptr<constrain::Matcher> matcher;
  std::vector<uint64_t> mask;
  bool constrained = false;
};

struct RequestState {
  uint64_t id = 0;
  Request request;
  OutputCallback on_output;
  std::vector<std::unique_ptr<Choice>> choices;
  Clock::time_point arrival;
  bool scheduled = false;       // a chunk of it has run
  bool produced = false;        // a token came out
  bool siblings_added = false;  // choices 1..n-1 handed to the scheduler
  int finished = 0;             // choices finished
  Usage usage;
  std::optional<std::string> error;
  // The event handed to on_output, kept for the next one: its buffers are reused unless the
  // callback moves them away.
  RequestOutput event;
};

// Whether the choice's generated tokens now end with the request's constraint_after.
bool ends_with_constraint_after(const Request& q, const Choice& c) {
  const auto& after = q.constraint_after;
  const int64_t n = static_cast<int64_t>(after.size());
  return c.generated() >= n && std::equal(after.begin(), after.end(), c.seq.tokens.end() - n);
}

}  // namespace engine

using engine::Choice;
using engine::RequestState;

struct Engine::Impl {
  Impl(std::unique_ptr<EngineModel> owned, const Tokenizer& tokenizer, const EngineOptions& opts);

  uint64_t add_request(Request request, OutputCallback on_output);
  void abort(uint64_t id);
  void start();
  void stop(StopMode mode);
  bool step();
  EngineStats stats() const;

  void run_loop();
  bool take_inbox();
  void run_batch(const std::vector<engine::ScheduledChunk>& chunks);
  bool gather_event(RequestState& r);
  // A sampled row's outcome: draw() computes it (rows in parallel: each touches only its own
  // choice's sampler and row), commit() applies it to the request (one at a time).
  struct Draw {
    TokenId token = 0;
    std::optional<TokenLogprobs> logprobs;
    // Under a constraint: the constraint allowed no token, or its matcher refused the one drawn
    // (a fault of the constraint, never of the request); else whether the token ended it.
    bool dead_end = false;
    bool ended = false;
    bool accepted = false;  // the draft stands (rejection sampling)
  };
  // The token after the first `length` tokens of the choice's sequence, from its row of logits;
  // with `draft`, verified by rejection sampling against it (`draft_probs`: its distribution, or
  // empty).
  Draw draw(const RequestState& r, Choice& c, float* row, int64_t length,
            const TokenId* draft = nullptr, std::span<const float> draft_probs = {}) const;
  struct Row;
  void verify(Row& row);
  void propose_drafts();
  void commit(RequestState& r, Choice& c, Draw d, Clock::time_point now);
  void finish(RequestState& r, Choice& c, FinishReason reason, Clock::time_point now);
  void abort_request(RequestState& r, Clock::time_point now);
  void add_siblings(RequestState& r);
  void publish_stats();
  RequestState& owner(const engine::Sequence& seq) { return *requests.at(seq.request_id); }

  std::unique_ptr<EngineModel> model;
  const Tokenizer& tokenizer;
  EngineOptions options;
  int64_t vocab = 0;
  KvCache cache;
  std::unique_ptr<engine::BlockManager> blocks;
  std::unique_ptr<engine::Scheduler> scheduler;
  std::unique_ptr<engine::Speculator> speculator;  // null: no speculation

  // Touched by the stepping thread only.
  std::unordered_map<uint64_t, std::unique_ptr<RequestState>> requests;
  EngineStats live;
  // A sampled sequence: its logits rows [first, first + 1 + drafts), drawn until a draft differs
  // from the token drawn before it; `accepted` drafts were equal.
  struct Row {
    RequestState* r;
    Choice* c;
    int64_t first = 0, drafts = 0, accepted = 0;
  };
  // A step's working buffers, kept across steps (sized for max_num_seqs up front, the logits
  // for the most rows sampled so far): a decode step allocates nothing.
  std::vector<float> logits;
  std::vector<SequenceInput> batch;
  std::vector<Row> sampled;
  std::vector<Draw> draws;
  std::vector<RequestState*> events;
  std::vector<std::unique_ptr<RequestState>> done;

  std::mutex mutex;  // guards what other threads hand to the stepping thread
  std::condition_variable wake;
  std::vector<std::unique_ptr<RequestState>> inbox;
  std::vector<uint64_t> aborts;
  bool stopping = false, abort_all = false;
  uint64_t next_id = 1;
  std::thread loop;
  std::atomic<int64_t> queued{0};  // added, not yet scheduled
  std::atomic<int64_t> unfinished{0};

  mutable std::mutex stats_mutex;
  EngineStats published;
};

Engine::Impl::Impl(std::unique_ptr<EngineModel> owned, const Tokenizer& tok,
                   const EngineOptions& opts)
    : model(std::move(owned)), tokenizer(tok), options(opts) {
  options.validate();
  vocab = model->vocab_size();
  const int64_t context = model->max_context();
  if (options.max_model_len > context)
    throw Error("engine option max_model_len " + std::to_string(options.max_model_len) +
                " exceeds the model's context of " + std::to_string(context) + " tokens");
  int64_t num_blocks = options.kv_blocks;
  if (num_blocks == 0) {
    const size_t per_block =
        KvCache::bytes_per_block(model->kv_shape(1, options.block_size, options.kv_type));
    num_blocks = static_cast<int64_t>(options.kv_cache_memory / per_block);
    if (num_blocks == 0)
      throw Error("engine option kv_cache_memory " + std::to_string(options.kv_cache_memory) +
                  " bytes holds no KV block (one takes " + std::to_string(per_block) + " bytes)");
  }
  const int64_t capacity = num_blocks * options.block_size;
  // One sequence must always fit in the pool alone, or preemption could never make room for it.
  if (options.max_model_len == 0) {
    options.max_model_len = std::min(context, capacity);
  } else if (options.max_model_len > capacity) {
    throw Error("engine: the KV cache holds " + std::to_string(capacity) + " tokens (" +
                std::to_string(num_blocks) + " blocks of " + std::to_string(options.block_size) +
                "), fewer than max_model_len " + std::to_string(options.max_model_len));
  }
  options.kv_blocks = num_blocks;
  cache = KvCache(model->kv_shape(num_blocks, options.block_size, options.kv_type));
  if (options.prefault_kv_cache)
    cache.prefault(model->pool() != nullptr ? *model->pool() : ThreadPool::global());
  blocks = std::make_unique<engine::BlockManager>(num_blocks, options.block_size,
                                                  options.enable_prefix_caching);
  scheduler = std::make_unique<engine::Scheduler>(
      *blocks, engine::SchedulerLimits{options.max_num_seqs, options.max_num_batched_tokens,
                                       model->rope_switch_length()});
  if (options.speculative && options.speculative->num_speculative_tokens > 0)
    speculator = std::make_unique<engine::Speculator>(
        *options.speculative, options.speculative_row_budget,
        engine::make_engine_draft(*options.speculative, vocab, options, model->pool()));
  const auto seqs = static_cast<size_t>(options.max_num_seqs);
  batch.reserve(seqs);
  sampled.reserve(seqs);
  draws.reserve(static_cast<size_t>(options.max_num_batched_tokens));
  events.reserve(seqs);
  done.reserve(seqs);
  live.kv_blocks_total = num_blocks;
  live.time_to_first_token = engine::make_histogram(engine::ttft_buckets());
  live.time_per_output_token = engine::make_histogram(engine::tpot_buckets());
  live.inter_token_latency = engine::make_histogram(engine::tpot_buckets());
  live.e2e_request_latency = engine::make_histogram(engine::e2e_buckets());
  live.queue_time = engine::make_histogram(engine::e2e_buckets());
  published = live;
}

uint64_t Engine::Impl::add_request(Request request, OutputCallback on_output) {
  request.validate();
  if (!on_output) throw Error("engine: add_request needs an output callback");
  const int64_t limit = options.max_model_len;
  const int64_t prompt = static_cast<int64_t>(request.prompt.size());
  for (TokenId id : request.prompt)
    if (id < 0 || id >= vocab)
      throw Error("request: prompt token id " + std::to_string(id) +
                  " is outside the vocabulary of " + std::to_string(vocab));
  for (TokenId id : request.stop_token_ids)
    if (id < 0 || id >= vocab)
      throw Error("request: stop token id " + std::to_string(id) +
                  " is outside the vocabulary of " + std::to_string(vocab));
  if (request.max_tokens ? prompt + *request.max_tokens > limit : prompt >= limit)
    throw Error("request: the prompt (" + std::to_string(prompt) + " tokens) plus max_tokens (" +
                (request.max_tokens ? std::to_string(*request.max_tokens) : std::string("1")) +
                ") exceeds the context of " + std::to_string(limit) + " tokens");

  auto state = std::make_unique<RequestState>();
  state->arrival = Clock::now();
  state->usage.prompt_tokens = prompt;
  state->on_output = std::move(on_output);
  std::lock_guard lock(mutex);
  if (stopping) throw EngineStopped("engine: shutting down, no new requests");
  if (queued.load() >= options.max_waiting)
    throw EngineOverloaded("engine: " + std::to_string(options.max_waiting) +
                           " requests already wait (max_waiting)");
  state->id = next_id++;
  for (int i = 0; i < request.n; ++i)
    state->choices.push_back(std::make_unique<Choice>(tokenizer, request, state->id, i, options,
                                                      vocab, speculator.get()));
  state->request = std::move(request);
  const uint64_t id = state->id;
  inbox.push_back(std::move(state));
  ++queued;
  ++unfinished;
  wake.notify_one();
  return id;
}

void Engine::Impl::abort(uint64_t id) {
  std::lock_guard lock(mutex);
  aborts.push_back(id);
  wake.notify_one();
}

void Engine::Impl::add_siblings(RequestState& r) {
  if (r.siblings_added) return;
  r.siblings_added = true;
  for (size_t i = 1; i < r.choices.size(); ++i)
    if (!r.choices[i]->finished) scheduler->add(&r.choices[i]->seq);
}

// Moves new requests and aborts over from the other threads; true when there were any.
bool Engine::Impl::take_inbox() {
  std::vector<std::unique_ptr<RequestState>> incoming;
  std::vector<uint64_t> cancelled;
  bool cancel_all;
  {
    std::lock_guard lock(mutex);
    incoming.swap(inbox);
    cancelled.swap(aborts);
    cancel_all = abort_all;
  }
  for (auto& r : incoming) {
    scheduler->add(&r->choices[0]->seq);
    // The other choices wait until the first has computed the prompt, then find it in the prefix
    // cache; without one they compute it alongside.
    if (!options.enable_prefix_caching) add_siblings(*r);
    const uint64_t id = r->id;
    requests.emplace(id, std::move(r));
  }
  const auto now = Clock::now();
  bool aborted = false;
  for (auto& [id, r] : requests)
    if (r->finished < static_cast<int>(r->choices.size()) &&
        (cancel_all || std::find(cancelled.begin(), cancelled.end(), id) != cancelled.end())) {
      abort_request(*r, now);
      aborted = true;
    }
  return !incoming.empty() || aborted;
}

void Engine::Impl::abort_request(RequestState& r, Clock::time_point now) {
  for (auto& c : r.choices)
    if (!c->finished) finish(r, *c, FinishReason::abort, now);
}

void Engine::Impl::finish(RequestState& r, Choice& c, FinishReason reason, Clock::time_point now) {
  c.finished = true;
  c.changed = true;
  c.delta.finish_reason = reason;
  scheduler->remove(&c.seq);
  if (c.generated() >= 2)
    engine::observe(live.time_per_output_token,
                    seconds(c.last_token - c.first_token) / static_cast<double>(c.generated() - 1));
  if (c.seq.choice == 0) add_siblings(r);
  if (++r.finished < static_cast<int>(r.choices.size())) return;
  if (!r.scheduled) --queued;
  --unfinished;
  engine::observe(live.e2e_request_latency, seconds(now - r.arrival));
  (reason == FinishReason::stop     ? live.requests_finished_stop
   : reason == FinishReason::length ? live.requests_finished_length
                                    : live.requests_finished_abort)++;
}

Engine::Impl::Draw Engine::Impl::draw(const RequestState& r, Choice& c, float* row, int64_t length,
                                      const TokenId* draft,
                                      std::span<const float> draft_probs) const {
  const Request& q = r.request;
  std::span<float> logits_row(row, static_cast<size_t>(vocab));
  Draw d;
  int64_t allowed = 0;
  if (c.constrained) {
    c.matcher->fill_mask(c.mask);
    allowed = engine::mask_logits(c.mask, logits_row);
    if (allowed == 0) {
      d.dead_end = true;
      return d;
    }
  }
  // Logprobs are of the logits as they came (masked by the constraint, which decides what can
  // come out at all), before min_tokens, penalties and temperature.
  thread_local std::vector<float> raw_row;
  if (q.logprobs) raw_row.assign(row, row + vocab);
  // Before min_tokens, ending the choice is not an option.
  const int64_t generated = length - c.seq.prompt_len;
  if (generated < q.min_tokens) {
    const std::span<const TokenId> eos =
        q.ignore_eos ? std::span<const TokenId>() : std::span<const TokenId>(model->eos_ids());
    if (c.constrained) {
      engine::forbid_unless_last(c.mask, allowed, eos, logits_row);
      engine::forbid_unless_last(c.mask, allowed, q.stop_token_ids, logits_row);
    } else {
      constexpr float kNever = -std::numeric_limits<float>::infinity();
      for (TokenId id : eos)
        if (id >= 0 && id < vocab) logits_row[id] = kNever;
      for (TokenId id : q.stop_token_ids) logits_row[id] = kNever;
    }
  }
  const auto all = std::span<const TokenId>(c.seq.tokens).first(static_cast<size_t>(length));
  if (draft != nullptr) {
    const Sampler::Verdict v =
        c.sampler.verify_at(static_cast<uint64_t>(generated), *draft, draft_probs, logits_row,
                            all.first(c.seq.prompt_len), all.subspan(c.seq.prompt_len));
    d.token = v.token;
    d.accepted = v.accepted;
  } else {
    d.token =
        c.sampler.sample(logits_row, all.first(c.seq.prompt_len), all.subspan(c.seq.prompt_len));
  }
  if (q.logprobs) {
    TokenLogprobs lp;
    const double lse = log_sum_exp(raw_row);
    lp.chosen = {d.token, static_cast<float>(raw_row[static_cast<size_t>(d.token)] - lse)};
    if (*q.logprobs > 0) {
      lp.top = top_logprobs(raw_row, *q.logprobs, lse);
      std::erase_if(lp.top, [](const TokenLogprob& t) { return std::isinf(t.logprob); });
    }
    d.logprobs = std::move(lp);
  }
  if (c.constrained) {
    // On this row's thread: advancing a grammar's matcher is not free either.
    d.dead_end = !c.matcher->accept(d.token);
    d.ended = !d.dead_end && c.matcher->is_ended();
  }
  return d;
}

void Engine::Impl::commit(RequestState& r, Choice& c, Draw d, Clock::time_point now) {
  const Request& q = r.request;
  if (d.dead_end) {
    if (!r.error)
      r.error = "engine: the output's constraint allowed no token after " +
                std::to_string(c.generated()) + " generated tokens";
    abort_request(r, now);
    return;
  }
  const TokenId token = d.token;
  c.seq.tokens.push_back(token);
  c.delta.token_ids.push_back(token);
  if (d.logprobs) c.delta.logprobs.push_back(std::move(*d.logprobs));
  c.changed = true;
  ++r.usage.completion_tokens;
  ++live.generation_tokens;
  if (c.generated() == 1) {
    c.first_token = now;
  } else {
    engine::observe(live.inter_token_latency, seconds(now - c.last_token));
  }
  c.last_token = now;
  if (!r.produced) {
    r.produced = true;
    engine::observe(live.time_to_first_token, seconds(now - r.arrival));
  }
  if (c.seq.choice == 0) add_siblings(r);

  if (c.matcher && !c.constrained) c.constrained = engine::ends_with_constraint_after(q, c);

  const bool may_stop = c.generated() > q.min_tokens;
  const auto& eos = model->eos_ids();
  const bool is_eos = std::find(eos.begin(), eos.end(), token) != eos.end();
  const bool is_stop_id =
      std::find(q.stop_token_ids.begin(), q.stop_token_ids.end(), token) != q.stop_token_ids.end();
  // A constraint that ended wins over min_tokens and ignore_eos.
  const bool stop_token =
      (is_eos && (d.ended || (may_stop && !q.ignore_eos))) || (is_stop_id && (may_stop || d.ended));
  if (stop_token) {
    if (q.detokenize) c.delta.text += c.text.finish(may_stop);
    c.delta.stop_token = token;
    finish(r, c, FinishReason::stop, now);
    return;
  }
  if (q.detokenize) c.delta.text += c.text.add(token, may_stop);
  const bool at_length = (q.max_tokens && c.generated() >= *q.max_tokens) ||
                         static_cast<int64_t>(c.seq.tokens.size()) >= options.max_model_len;
  if (q.detokenize && !c.text.stop_string() && at_length) c.delta.text += c.text.finish(may_stop);
  if (q.detokenize && !c.text.stop_string() && d.ended && !at_length)
    c.delta.text += c.text.finish(may_stop);
  if (c.text.stop_string()) {
    c.delta.stop_string = c.text.stop_string();
    finish(r, c, FinishReason::stop, now);
  } else if (d.ended) {
    finish(r, c, FinishReason::stop, now);
  } else if (at_length) {
    finish(r, c, FinishReason::length, now);
  }
}

void Engine::Impl::run_batch(const std::vector<engine::ScheduledChunk>& chunks) {
  batch.clear();
  int64_t rows = 0;
  const auto started = Clock::now();
  for (const engine::ScheduledChunk& chunk : chunks) {
    const engine::Sequence& seq = *chunk.seq;
    SequenceInput in;
    in.tokens = std::span<const TokenId>(seq.tokens).subspan(chunk.start, chunk.count);
    in.start = chunk.start;
    in.length = static_cast<int64_t>(seq.tokens.size());
    in.block_table = seq.blocks.blocks;
    in.logits = !chunk.sample      ? SequenceInput::Logits::none
                : chunk.drafts > 0 ? SequenceInput::Logits::all
                                   : SequenceInput::Logits::last;
    batch.push_back(in);
    rows += chunk.sample ? 1 + chunk.drafts : 0;
    RequestState& r = owner(seq);
    if (!r.scheduled) {
      r.scheduled = true;
      --queued;
      live.prompt_tokens += r.usage.prompt_tokens;
      engine::observe(live.queue_time, seconds(started - r.arrival));
    }
  }
  logits.resize(static_cast<size_t>(rows * vocab));
  try {
    model->forward(batch, cache, logits.data());
  } catch (const std::exception& e) {
    // The batch's requests cannot go on (their cache may be half written); everyone else can.
    const auto now = Clock::now();
    for (const engine::ScheduledChunk& chunk : chunks) {
      RequestState& r = owner(*chunk.seq);
      if (r.error) continue;
      r.error = std::string("engine: the model failed: ") + e.what();
      abort_request(r, now);
    }
    return;
  }
  const auto now = Clock::now();
  sampled.clear();
  int64_t row = 0;
  for (const engine::ScheduledChunk& chunk : chunks) {
    if (!chunk.sample) continue;
    RequestState& r = owner(*chunk.seq);
    if (chunk.seq->choice == 0 && !r.produced)
      r.usage.cached_prompt_tokens = chunk.seq->first_cached_tokens;
    sampled.push_back({&r, r.choices[chunk.seq->choice].get(), row, chunk.drafts});
    row += 1 + chunk.drafts;
  }
  // Sampling a row of a large vocabulary is not free (more so with logprobs): the rows of a step
  // are drawn on the model's threads, not one after another on this one.
  draws.resize(static_cast<size_t>(rows));
  ThreadPool& pool = model->pool() != nullptr ? *model->pool() : ThreadPool::global();
  // Captures `this` alone: small enough for std::function to hold without allocating.
  pool.run(static_cast<int64_t>(sampled.size()), [this](int64_t i) { verify(sampled[i]); });
  // The rejected drafts leave the sequences before the scheduler marks their tokens computed
  // (and registers full blocks in the prefix cache): their keys and values are as good as gone,
  // overwritten by the next step.
  for (Row& s : sampled) {
    engine::Sequence& seq = s.c->seq;
    seq.tokens.resize(seq.tokens.size() - static_cast<size_t>(s.drafts - s.accepted));
    seq.drafted = 0;
    if (s.drafts > 0) speculator->record(*s.c->draft, s.drafts, s.accepted);
  }
  scheduler->complete(chunks);
  for (Row& s : sampled) {
    // commit() appends each token again, the accepted drafts included.
    engine::Sequence& seq = s.c->seq;
    seq.tokens.resize(seq.tokens.size() - static_cast<size_t>(s.accepted));
    for (int64_t j = 0; j <= s.accepted && !s.c->finished; ++j)
      commit(*s.r, *s.c, std::move(draws[static_cast<size_t>(s.first + j)]), now);
  }
}

// Draws a sampled sequence's rows in order: row j gives the token after the j-th draft, which
// stands while it equals the token drawn at its position (match), or while the rejection sampler
// accepts it (then a rejected draft's row gives the residual's token instead).
void Engine::Impl::verify(Row& row) {
  const engine::Sequence& seq = row.c->seq;
  const int64_t base = static_cast<int64_t>(seq.tokens.size()) - row.drafts;
  const bool rejection = row.drafts > 0 && speculator->rejection_sampling();
  // The proposer's distributions, when it has one for every draft verified (a draft model's
  // drafts are verified as point masses: the committed tokens still follow the target's
  // distribution, whatever drew the drafts).
  const Proposer* proposer = rejection ? row.c->draft->proposer.get() : nullptr;
  const std::span<const float> q =
      proposer != nullptr ? proposer->draft_probs() : std::span<const float>();
  const bool has_q = q.size() >= static_cast<size_t>(row.drafts * vocab);
  for (int64_t j = 0;; ++j) {
    const auto at = static_cast<size_t>(row.first + j);
    float* logits_row = logits.data() + static_cast<int64_t>(at) * vocab;
    if (j == row.drafts) {
      draws[at] = draw(*row.r, *row.c, logits_row, base + j);
      row.accepted = j;
      return;
    }
    const TokenId drafted = seq.tokens[static_cast<size_t>(base + j)];
    if (rejection) {
      const auto q_row = has_q
                             ? q.subspan(static_cast<size_t>(j * vocab), static_cast<size_t>(vocab))
                             : std::span<const float>();
      draws[at] = draw(*row.r, *row.c, logits_row, base + j, &drafted, q_row);
    } else {
      draws[at] = draw(*row.r, *row.c, logits_row, base + j);
    }
    if (!(rejection ? draws[at].accepted : draws[at].token == drafted)) {
      row.accepted = j;
      return;
    }
  }
}

// Before scheduling: drafts for every sequence that decodes, as many as the step's size allows.
void Engine::Impl::propose_drafts() {
  if (!speculator) return;
  const auto decoding = [](const Choice& c) {
    return !c.finished && c.seq.state == engine::Sequence::State::running && c.seq.pending() == 1;
  };
  int64_t count = 0;
  for (auto& [id, r] : requests)
    for (auto& c : r->choices) count += decoding(*c);
  const int64_t per_sequence = speculator->drafts_per_sequence(count);
  for (auto& [id, r] : requests)
    for (auto& c : r->choices) {
      if (!c->draft) continue;
      // Room for the drafts and the token after them within the tokens the choice may reach.
      const int64_t room = c->capacity - static_cast<int64_t>(c->seq.tokens.size()) - 1;
      speculator->propose(c->seq, *c->draft, decoding(*c) ? std::min(per_sequence, room) : 0);
    }
  speculator->finish_proposals();
}

// Moves the request's new deltas into its event; false when there are none. The event's
// previous deltas (unless the callback took them) go back to the choices, emptied, so that both
// sets of buffers are reused.
bool Engine::Impl::gather_event(RequestState& r) {
  RequestOutput& out = r.event;
  size_t count = 0;
  for (auto& c : r.choices) {
    if (!c->changed) continue;
    if (count == out.choices.size()) out.choices.emplace_back();
    std::swap(out.choices[count++], c->delta);
    c->clear_delta();
    c->changed = false;
  }
  if (count == 0) return false;
  out.choices.resize(count);
  out.request_id = r.id;
  out.usage = r.usage;
  out.finished = r.finished == static_cast<int>(r.choices.size());
  out.error = r.error;
  return true;
}

bool Engine::Impl::step() {
  bool worked = take_inbox();
  propose_drafts();
  const std::vector<engine::ScheduledChunk>& chunks = scheduler->schedule();
  if (!chunks.empty()) {
    run_batch(chunks);
    worked = true;
  }
  // Events go out after the step's work; finished requests leave the table first.
  events.clear();
  for (auto it = requests.begin(); it != requests.end();) {
    RequestState& r = *it->second;
    if (gather_event(r)) events.push_back(&r);
    if (r.finished == static_cast<int>(r.choices.size())) {
      done.push_back(std::move(it->second));
      it = requests.erase(it);
    } else {
      ++it;
    }
  }
  publish_stats();
  for (RequestState* r : events) r->on_output(std::move(r->event));
  done.clear();
  return worked;
}

void Engine::Impl::publish_stats() {
  live.running = scheduler->num_running();
  live.waiting = scheduler->num_waiting();
  live.kv_blocks_used = blocks->used_blocks();
  live.kv_usage =
      static_cast<double>(live.kv_blocks_used) / static_cast<double>(live.kv_blocks_total);
  live.prefix_cache_queries = scheduler->prefix_queries();
  live.prefix_cache_hits = scheduler->prefix_hits();
  live.preemptions = scheduler->preemptions();
  if (speculator) live.speculation = speculator->stats();
  std::lock_guard lock(stats_mutex);
  published = live;
}

EngineStats Engine::Impl::stats() const {
  std::lock_guard lock(stats_mutex);
  return published;
}

void Engine::Impl::run_loop() {
  for (;;) {
    {
      std::unique_lock lock(mutex);
      wake.wait(lock, [&] {
        return !inbox.empty() || !aborts.empty() || abort_all || stopping || !requests.empty();
      });
      if (stopping && inbox.empty() && requests.empty()) return;
    }
    if (options.before_step) options.before_step();
    step();
  }
}

void Engine::Impl::start() {
  std::lock_guard lock(mutex);
  if (stopping) throw Error("engine: start() after stop()");
  if (loop.joinable()) return;
  loop = std::thread([this] { run_loop(); });
}

void Engine::Impl::stop(StopMode mode) {
  bool running_loop;
  {
    std::lock_guard lock(mutex);
    stopping = true;
    if (mode == StopMode::abort) abort_all = true;
    running_loop = loop.joinable();
  }
  wake.notify_all();
  if (running_loop) {
    loop.join();
  } else {
    while (step()) {
    }
  }
}

Engine::Engine(std::unique_ptr<EngineModel> model, const Tokenizer& tokenizer,
               const EngineOptions& options)
    : impl_(std::make_unique<Impl>(std::move(model), tokenizer, options)) {}

Engine::~Engine() { impl_->stop(StopMode::abort); }

uint64_t Engine::add_request(Request request, OutputCallback on_output) {
  return impl_->add_request(std::move(request), std::move(on_output));
}
void Engine::abort(uint64_t request_id) { impl_->abort(request_id); }
void Engine::start() { impl_->start(); }
void Engine::stop(StopMode mode) { impl_->stop(mode); }
bool Engine::step() {
  if (impl_->loop.joinable()) throw Error("engine: step() while the loop thread runs");
  return impl_->step();
}
bool Engine::has_unfinished() const { return impl_->unfinished.load() > 0; }
EngineStats Engine::stats() const { return impl_->stats(); }
const EngineOptions& Engine::options() const { return impl_->options; }
int64_t Engine::max_model_len() const { return impl_->options.max_model_len; }
int64_t Engine::vocab_size() const { return impl_->vocab; }
const std::vector<TokenId>& Engine::eos_ids() const { return impl_->model->eos_ids(); }

}  // namespace dq4
