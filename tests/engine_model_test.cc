// The engine on the stories260K fixture: many requests batched together give exactly what each
// gives alone, whatever the chunking, the prefix cache, preemptions or aborts around it.
#include <gtest/gtest.h>

#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "dq4/engine/engine.h"
#include "dq4/kernels/thread_pool.h"
#include "dq4/model/model.h"
#include "engine_outputs.h"
#include "stories_fixture.h"

namespace dq4 {
namespace {

// One thread: the model is tiny, and these tests are about batching, not threading (the model's
// own tests cover 1 to 3 threads).
ThreadPool& one_thread() {
  static ThreadPool pool(1);
  return pool;
}

Model& stories_model() {
  static std::unique_ptr<Model> model = Model::load(test::stories_dir(), {}, &one_thread());
  return *model;
}

using test::stories_tokenizer;

struct Result {
  test::ChoiceOutputs choices;
  Usage usage;
  bool finished = false;
};

// Collects every request's events; wait() blocks until the listed requests have finished.
class Collector {
 public:
  OutputCallback callback() {
    return [this](RequestOutput&& out) {
      std::lock_guard lock(mutex_);
      Result& r = results_[out.request_id];
      for (const ChoiceDelta& d : out.choices) test::append(r.choices, d);
      r.usage = out.usage;
      r.finished = out.finished;
      changed_.notify_all();
    };
  }
  Result get(uint64_t id) {
    std::lock_guard lock(mutex_);
    return results_[id];
  }
  // Until `done(result)` holds for request `id`.
  template <class Done>
  void wait(uint64_t id, Done done) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return done(results_[id]); });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<uint64_t, Result> results_;
};

void run_until_done(Engine& engine) {
  while (engine.has_unfinished()) ASSERT_TRUE(engine.step());
}

// The request run alone, in an engine of its own without prefix caching.
Result alone(const Request& request) {
  EngineOptions o;
  o.kv_blocks = 64;
  o.enable_prefix_caching = false;
  Engine engine(stories_model(), stories_tokenizer(), o, &one_thread());
  Collector c;
  const uint64_t id = engine.add_request(request, c.callback());
  run_until_done(engine);
  return c.get(id);
}

Request greedy(const std::string& text, int64_t max_tokens) {
  Request r;
  r.prompt = stories_tokenizer().encode(text, true);
  r.sampling.temperature = 0;
  r.max_tokens = max_tokens;
  return r;
}

std::vector<Request> story_requests(int count) {
  const std::vector<std::string> starts = {
      "Once upon a time",
      "Lily went to the park",
      "The little dog was sad because",
      "Tom and Sam found a big box. Inside the box",
      "One day, a bird",
      "Mom said",
      "The sun was hot and the children wanted to play in the water, so they",
      "There was a cat"};
  std::vector<Request> requests;
  for (int i = 0; i < count; ++i) {
    std::string text = starts[i % starts.size()];
    for (int k = 0; k < i / 8; ++k) text += " and then they were happy";
    requests.push_back(greedy(text, 8 + (i * 13) % 48));
  }
  return requests;
}

TEST(EngineModel, ReproducesTheFixtureReferenceGeneration) {
  std::ifstream in(test::stories_dir() + "/reference_generation.json");
  ASSERT_TRUE(in) << "reference_generation.json is missing";
  const nlohmann::json ref = nlohmann::json::parse(in);
  for (const auto& run : ref["runs"]) {
    Request r;
    r.prompt = run["prompt_ids"].get<std::vector<TokenId>>();
    r.sampling.temperature = 0;
    r.ignore_eos = true;
    r.max_tokens = run["steps"].get<int64_t>();
    EXPECT_EQ(alone(r).choices[0].tokens, run["generated_ids"].get<std::vector<TokenId>>())
        << run["name"];
  }
}

TEST(EngineModel, TextIsTheDecodedContinuationAndLogprobsFollowTheLogits) {
  Request r = greedy("Once upon a time, there was a little girl named Lily.", 60);
  r.logprobs = 3;
  EngineOptions o;
  o.kv_blocks = 64;
  Engine engine(stories_model(), stories_tokenizer(), o, &one_thread());
  std::vector<TokenLogprobs> logprobs;
  std::vector<TokenId> tokens;
  std::string text;
  engine.add_request(r, [&](RequestOutput&& out) {
    for (ChoiceDelta& d : out.choices) {
      tokens.insert(tokens.end(), d.token_ids.begin(), d.token_ids.end());
      logprobs.insert(logprobs.end(), d.logprobs.begin(), d.logprobs.end());
      text += d.text;
    }
  });
  run_until_done(engine);
  std::vector<TokenId> all = r.prompt;
  all.insert(all.end(), tokens.begin(), tokens.end());
  const std::string prompt_text = stories_tokenizer().decode(r.prompt, true);
  EXPECT_EQ(prompt_text + text, stories_tokenizer().decode(all, true));
  ASSERT_EQ(logprobs.size(), tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    ASSERT_EQ(logprobs[i].top.size(), 3u);
    // Greedy: the chosen token is the most likely one.
    EXPECT_EQ(logprobs[i].chosen.token, tokens[i]);
    EXPECT_EQ(logprobs[i].top[0].token, tokens[i]);
    EXPECT_EQ(logprobs[i].chosen.logprob, logprobs[i].top[0].logprob);
    EXPECT_GE(logprobs[i].top[1].logprob, logprobs[i].top[2].logprob);
    EXPECT_LT(logprobs[i].chosen.logprob, 0.0f);
  }
}

TEST(EngineModel, ThirtyTwoConcurrentGreedyRequestsEachEqualTheRequestAlone) {
  const std::vector<Request> requests = story_requests(32);
  EngineOptions o;
  o.kv_blocks = 512;
  o.max_num_batched_tokens = 48;  // prompts go in chunks beside the others' decode tokens
  o.max_num_seqs = 24;
  Engine engine(stories_model(), stories_tokenizer(), o, &one_thread());
  engine.start();
  Collector c;
  std::vector<uint64_t> ids;
  for (const Request& r : requests) ids.push_back(engine.add_request(r, c.callback()));
  for (uint64_t id : ids) c.wait(id, [](const Result& r) { return r.finished; });
  for (size_t i = 0; i < requests.size(); ++i) {
    Result want = alone(requests[i]);
    Result got = c.get(ids[i]);
    EXPECT_EQ(got.choices[0].tokens, want.choices[0].tokens) << "request " << i;
    EXPECT_EQ(got.choices[0].text, want.choices[0].text) << "request " << i;
    EXPECT_EQ(got.choices[0].finish, want.choices[0].finish) << "request " << i;
    EXPECT_EQ(got.usage.completion_tokens, want.usage.completion_tokens);
  }
  engine.stop();
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
  EXPECT_EQ(engine.stats().time_to_first_token.count, 32u);
}

TEST(EngineModel, AbortingMidwayReturnsEveryBlock) {
  EngineOptions o;
  o.kv_blocks = 256;
  Engine engine(stories_model(), stories_tokenizer(), o, &one_thread());
  engine.start();
  Collector c;
  std::vector<uint64_t> ids;
  for (const Request& r : story_requests(8)) {
    Request longer = r;
    longer.max_tokens = 400;
    longer.ignore_eos = true;
    ids.push_back(engine.add_request(longer, c.callback()));
  }
  for (uint64_t id : ids)
    c.wait(id, [](const Result& r) {
      return r.choices.count(0) && !r.choices.at(0).tokens.empty();
    });  // all are mid-way
  EXPECT_GT(engine.stats().kv_blocks_used, 0);
  for (uint64_t id : ids) engine.abort(id);
  for (uint64_t id : ids) c.wait(id, [](const Result& r) { return r.finished; });
  for (uint64_t id : ids) EXPECT_EQ(c.get(id).choices[0].finish, FinishReason::abort);
  engine.stop();
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
  EXPECT_EQ(engine.stats().requests_finished_abort, 8u);
}

TEST(EngineModel, PrefixCacheHitsGiveIdenticalOutputs) {
  EngineOptions o;
  o.kv_blocks = 256;
  o.block_size = 8;
  Engine engine(stories_model(), stories_tokenizer(), o, &one_thread());
  Collector c;
  const Request r = greedy(
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
      "park with her friends.",
      40);
  const uint64_t first = engine.add_request(r, c.callback());
  run_until_done(engine);
  const uint64_t second = engine.add_request(r, c.callback());
  run_until_done(engine);
  Result a = c.get(first), b = c.get(second), want = alone(r);
  EXPECT_EQ(a.usage.cached_prompt_tokens, 0);
  EXPECT_EQ(b.usage.cached_prompt_tokens, static_cast<int64_t>((r.prompt.size() - 1) / 8 * 8));
  EXPECT_GT(b.usage.cached_prompt_tokens, 0);
  EXPECT_EQ(a.choices[0].tokens, want.choices[0].tokens);
  EXPECT_EQ(b.choices[0].tokens, want.choices[0].tokens);
  EXPECT_EQ(b.choices[0].text, want.choices[0].text);
  EXPECT_GT(engine.stats().prefix_cache_hits, 0u);
}

TEST(EngineModel, SeededChoicesAreReproducibleWhateverRunsBesideThem) {
  Request r = greedy(
      "Lily and Tom went to the park. They saw a big tree with red apples. Tom wanted to climb "
      "the tree, but Lily said",
      30);
  ASSERT_GT(r.prompt.size(), 17u);  // at least one full block to share
  r.sampling.temperature = 0.9f;
  r.sampling.top_p = 0.95f;
  r.sampling.seed = 1234;
  r.n = 4;
  EngineOptions o;
  o.kv_blocks = 256;
  o.max_num_batched_tokens = 32;
  o.max_num_seqs = 16;
  Engine engine(stories_model(), stories_tokenizer(), o, &one_thread());
  Collector c;
  const uint64_t busy = engine.add_request(story_requests(10)[9], c.callback());
  const uint64_t first = engine.add_request(r, c.callback());
  run_until_done(engine);
  const uint64_t again = engine.add_request(r, c.callback());
  run_until_done(engine);
  Result a = c.get(first), b = c.get(again);
  EXPECT_TRUE(c.get(busy).finished);
  ASSERT_EQ(a.choices.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(a.choices.at(i).tokens, b.choices.at(i).tokens) << "choice " << i;
    EXPECT_EQ(a.choices.at(i).text, b.choices.at(i).text) << "choice " << i;
    Request one = r;
    one.n = 1;
    one.sampling.seed = 1234 + i;
    EXPECT_EQ(alone(one).choices[0].tokens, a.choices.at(i).tokens) << "choice " << i;
  }
  EXPECT_NE(a.choices.at(0).text, a.choices.at(1).text);
  // The later choices found the prompt in the prefix cache.
  EXPECT_GT(engine.stats().prefix_cache_hits, 0u);
}

TEST(EngineModel, ARowsSamplingOnSeveralThreadsGivesTheOneThreadOutputs) {
  // A step's rows are drawn in parallel on the model's threads: seeded sampled choices and
  // logprobs, batched together, come out the same on three threads as on one.
  std::vector<Request> requests = story_requests(12);
  for (size_t i = 0; i < requests.size(); ++i) {
    Request& r = requests[i];
    r.max_tokens = 24;
    r.sampling.temperature = 0.7f + 0.1f * static_cast<float>(i % 4);
    r.sampling.top_k = i % 3 == 0 ? 20 : 0;
    r.sampling.top_p = i % 2 == 0 ? 0.9f : 1.0f;
    r.sampling.seed = 100 + i;
    r.n = i % 5 == 0 ? 2 : 1;
    if (i % 3 == 1) r.logprobs = 3;
  }
  const auto run = [&](ThreadPool& pool) {
    EngineOptions o;
    o.kv_blocks = 256;
    o.max_num_batched_tokens = 64;
    o.max_num_seqs = 16;
    Engine engine(stories_model(), stories_tokenizer(), o, &pool);
    Collector c;
    std::vector<uint64_t> ids;
    for (const Request& r : requests) ids.push_back(engine.add_request(r, c.callback()));
    run_until_done(engine);
    std::vector<Result> out;
    for (uint64_t id : ids) out.push_back(c.get(id));
    return out;
  };
  ThreadPool three(3);
  const std::vector<Result> want = run(one_thread()), got = run(three);
  for (size_t i = 0; i < requests.size(); ++i) {
    test::expect_same_choices(want[i].choices, got[i].choices, "request " + std::to_string(i));
    if (requests[i].logprobs) {
      for (const auto& [index, choice] : want[i].choices)
        EXPECT_EQ(choice.logprobs.size(), choice.tokens.size())
            << "request " << i << ", choice " << index;
    }
  }
}

TEST(EngineModel, SpeculationGivesThePlainOutputsOnOneToThreeThreads) {
  // n-gram drafts on real text (greedy stories repeat themselves), verified by the model's rows:
  // greedy and seeded choices and their logprobs as plain decoding gives them, beside a request
  // that does not speculate.
  std::vector<Request> requests = story_requests(6);
  for (size_t i = 0; i < requests.size(); ++i) {
    Request& r = requests[i];
    r.max_tokens = 48;
    if (i % 2 == 1) {
      r.sampling.temperature = 0.8f;
      r.sampling.top_p = 0.9f;
      r.sampling.seed = 7 + i;
      r.logprobs = 2;
    }
  }
  requests[4].speculate = false;
  const auto run = [&](ThreadPool& pool, bool speculate, EngineStats* stats) {
    EngineOptions o;
    o.kv_blocks = 128;
    o.max_num_batched_tokens = 64;
    o.max_num_seqs = 8;
    if (speculate) o.speculative = parse_speculate_spec("ngram:k=4,min=1,max=3");
    Engine engine(stories_model(), stories_tokenizer(), o, &pool);
    Collector c;
    std::vector<uint64_t> ids;
    for (const Request& r : requests) ids.push_back(engine.add_request(r, c.callback()));
    run_until_done(engine);
    if (stats != nullptr) *stats = engine.stats();
    std::vector<Result> out;
    for (uint64_t id : ids) out.push_back(c.get(id));
    return out;
  };
  const std::vector<Result> want = run(one_thread(), false, nullptr);
  ThreadPool two(2), three(3);
  for (ThreadPool* pool : {&one_thread(), &two, &three}) {
    EngineStats stats;
    const std::vector<Result> got = run(*pool, true, &stats);
    EXPECT_GT(stats.speculation.accepted_tokens, 0u);
    for (size_t i = 0; i < requests.size(); ++i)
      test::expect_same_choices(
          want[i].choices, got[i].choices,
          "request " + std::to_string(i) + ", " + std::to_string(pool->size()) + " threads");
  }
}

TEST(EngineModel, PreemptionUnderATinyPoolGivesIdenticalOutputs) {
  const std::vector<Request> requests = story_requests(12);
  EngineOptions o;
  o.kv_blocks = 12;  // 192 tokens for 12 sequences of up to ~80
  o.max_model_len = 192;
  o.max_num_batched_tokens = 64;
  o.max_num_seqs = 16;
  Engine engine(stories_model(), stories_tokenizer(), o, &one_thread());
  Collector c;
  std::vector<uint64_t> ids;
  for (const Request& r : requests) ids.push_back(engine.add_request(r, c.callback()));
  run_until_done(engine);
  EXPECT_GT(engine.stats().preemptions, 0u);
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
  for (size_t i = 0; i < requests.size(); ++i) {
    Result want = alone(requests[i]);
    EXPECT_EQ(c.get(ids[i]).choices[0].tokens, want.choices[0].tokens) << "request " << i;
    EXPECT_EQ(c.get(ids[i]).choices[0].text, want.choices[0].text) << "request " << i;
  }
}

}  // namespace
}  // namespace dq4
