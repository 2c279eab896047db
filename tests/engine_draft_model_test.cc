// Speculative decoding with a draft model: the configs that name one, the tokenizer check, the
// draft's cache rolling back to what a fresh one holds, and the engine's outputs identical with
// and without the draft (greedy, seeded, logprobs, n > 1, stop strings, a request that does not
// speculate, preemption, prefix caching) on 1 to 3 threads: stories260K in W4A8 drafted by its
// F32 self on real text, and a tiny synthetic Llama 3 drafted by a one-layer cut of itself.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "dq4/convert/synth.h"
#include "dq4/engine/engine.h"
#include "dq4/engine/speculation.h"
#include "dq4/kernels/thread_pool.h"
#include "dq4/model/model.h"
#include "engine_outputs.h"
#include "expect_error.h"
#include "safetensors_writer.h"
#include "stories_fixture.h"

namespace dq4 {
namespace {

ThreadPool& one_thread() {
  static ThreadPool pool(1);
  return pool;
}

// The target: stories260K quantized to W4A8 at load; its draft: the F32 checkpoint as stored.
Model& stories_w4a8() {
  static std::unique_ptr<Model> model = [] {
    ModelOptions o;
    o.quantize_group = 32;
    return Model::load(test::stories_dir(), o, &one_thread());
  }();
  return *model;
}

SpeculativeConfig stories_draft(int64_t k) {
  SpeculativeConfig c =
      parse_speculative_config(R"({"model": ")" + test::stories_dir() +
                               R"(", "num_speculative_tokens": )" + std::to_string(k) + "}");
  load_draft_model(c, test::stories_tokenizer(), stories_w4a8().vocab_size());
  return c;
}

TEST(DraftModel, ConfigsNameTheDraftsDirectory) {
  const std::string dir = test::stories_dir();
  SpeculativeConfig c =
      parse_speculative_config(R"({"model": ")" + dir + R"(", "num_speculative_tokens": 3})");
  EXPECT_EQ(c.method, SpeculativeConfig::Method::draft_model);
  EXPECT_EQ(c.model, dir);
  EXPECT_EQ(c.num_speculative_tokens, 3);
  EXPECT_EQ(c.name(), "draft:" + dir + ",k=3");
  c = parse_speculative_config(R"({"method": "draft_model", "model": ")" + dir +
                               R"(", "num_speculative_tokens": 2})");
  EXPECT_EQ(c.method, SpeculativeConfig::Method::draft_model);
  EXPECT_EQ(parse_speculate_spec("draft:" + dir + ",k=5").num_speculative_tokens, 5);
  EXPECT_EQ(parse_speculate_spec("draft:" + dir + ",k=5").model, dir);
  EXPECT_EQ(parse_speculate_spec(dir).method, SpeculativeConfig::Method::draft_model);
  EXPECT_EQ(parse_speculate_spec(dir).num_speculative_tokens, 4);
  test::expect_error(
      [] { parse_speculative_config(R"({"method": "draft_model", "num_speculative_tokens": 2})"); },
      "model");
  test::expect_error(
      [&] {
        parse_speculative_config(R"({"method": "ngram", "model": ")" + dir +
                                 R"(", "num_speculative_tokens": 2})");
      },
      "model");
  test::expect_error(
      [&] {
        parse_speculative_config(R"({"model": ")" + dir +
                                 R"(", "num_speculative_tokens": 2, "prompt_lookup_min": 2})");
      },
      "prompt_lookup_min");
  test::expect_error(
      [] { parse_speculative_config(R"({"model": 3, "num_speculative_tokens": 2})"); }, "model");
  test::expect_error([] { parse_speculate_spec("no/such/draft"); }, "no/such/draft");
  test::expect_error([&] { make_proposer(parse_speculate_spec(dir)); }, "draft");
  // The engine refuses a draft config whose model was never loaded.
  EngineOptions o;
  o.kv_blocks = 16;
  o.speculative = parse_speculate_spec(dir);
  test::expect_error([&] { Engine(stories_w4a8(), test::stories_tokenizer(), o, &one_thread()); },
                     "not loaded");
}

TEST(DraftModel, AnotherTokenizerIsRefusedNamingWhatDiffers) {
  const Tokenizer& stories = test::stories_tokenizer();
  const Tokenizer llama2 = Tokenizer::from_directory(test::fixture_path("tokenizer-llama2"));
  test::expect_error([&] { check_same_tokenizer(stories, llama2, "D"); },
                     {"draft model D", "tokens"});
  // The same size, one token renamed.
  std::ifstream in(test::stories_dir() + "/tokenizer.json");
  nlohmann::json j = nlohmann::json::parse(in);
  auto& vocab = j["model"]["vocab"];
  const std::string renamed = vocab.items().begin().key();
  const int id = vocab[renamed];
  vocab.erase(renamed);
  vocab["\xe2\x96\x81zzz"] = id;
  const Tokenizer other = Tokenizer::from_json(j.dump(), "renamed");
  test::expect_error([&] { check_same_tokenizer(stories, other, "D"); },
                     {"token " + std::to_string(id), "zzz"});
  // A draft directory without a tokenizer, or none at all.
  test::ScratchDir scratch;
  SpeculativeConfig c = parse_speculate_spec("draft:" + scratch.path());
  test::expect_error([&] { load_draft_model(c, stories, 512); }, "tokenizer.json");
  c.model = scratch.file("missing");
  test::expect_error([&] { load_draft_model(c, stories, 512); }, "not a directory");
}

std::vector<TokenId> drafts(Proposer& p, const std::vector<TokenId>& tokens, size_t k) {
  std::vector<TokenId> out(k);
  out.resize(static_cast<size_t>(p.propose(tokens, out)));
  return out;
}

TEST(DraftModel, RolledBackCacheProposesWhatAFreshOneProposes) {
  SpeculativeConfig c = stories_draft(4);
  const int64_t vocab = stories_w4a8().vocab_size();
  const std::vector<TokenId> prompt = test::stories_tokenizer().encode("Once upon a time", true);
  auto kept = make_draft_model_proposer(*c.draft, vocab, 128, &one_thread());
  std::vector<TokenId> tokens = prompt;
  const std::vector<TokenId> first = drafts(*kept, tokens, 4);
  ASSERT_EQ(first.size(), 4u);
  // The target took the first draft, then another token than the second, and two more before
  // the next proposal (a step without drafts): the draft's cache keeps the first draft's
  // position and recomputes from the second.
  tokens.push_back(first[0]);
  tokens.push_back(first[1] == 5 ? 6 : 5);
  tokens.push_back(first[2]);
  tokens.push_back(first[3]);
  for (int round = 0; round < 3; ++round) {
    auto fresh = make_draft_model_proposer(*c.draft, vocab, 128, &one_thread());
    const std::vector<TokenId> want = drafts(*fresh, tokens, 4);
    EXPECT_EQ(drafts(*kept, tokens, 4), want) << "round " << round;
    // Every draft taken, then the token after them.
    tokens.insert(tokens.end(), want.begin(), want.end());
    tokens.push_back(want.back());
  }
  // The draft, proposing for its own greedy continuation, is the plain greedy decode.
  auto self = make_draft_model_proposer(*c.draft, c.draft->vocab_size(), 128, &one_thread());
  std::vector<TokenId> greedy = prompt;
  for (int i = 0; i < 8; ++i) greedy.push_back(drafts(*self, greedy, 1).at(0));
  auto again = make_draft_model_proposer(*c.draft, c.draft->vocab_size(), 128, &one_thread());
  EXPECT_EQ(
      drafts(*again, prompt, 8),
      std::vector<TokenId>(greedy.begin() + static_cast<ptrdiff_t>(prompt.size()), greedy.end()));
}

struct Outcome {
  std::vector<test::ChoiceOutputs> requests;
  EngineStats stats;
};

Outcome run(Model& model, const Tokenizer& tokenizer, EngineOptions o,
            const std::vector<Request>& requests, ThreadPool& pool) {
  Engine engine(model, tokenizer, o, &pool);
  Outcome out;
  out.requests.resize(requests.size());
  for (size_t i = 0; i < requests.size(); ++i)
    engine.add_request(requests[i], [&out, i](RequestOutput&& event) {
      for (const ChoiceDelta& d : event.choices) test::append(out.requests[i], d);
    });
  while (engine.has_unfinished()) EXPECT_TRUE(engine.step());
  out.stats = engine.stats();
  EXPECT_EQ(out.stats.kv_blocks_used, 0);
  return out;
}

void expect_same(const Outcome& want, const Outcome& got, const std::string& what) {
  ASSERT_EQ(want.requests.size(), got.requests.size());
  for (size_t i = 0; i < want.requests.size(); ++i)
    test::expect_same_choices(want.requests[i], got.requests[i],
                              what + ", request " + std::to_string(i));
}

Request request(const Tokenizer& tokenizer, const std::string& text, int64_t max_tokens) {
  Request r;
  r.prompt = tokenizer.encode(text, true);
  r.sampling.temperature = 0;
  r.max_tokens = max_tokens;
  return r;
}

// Greedy and seeded requests, logprobs, n = 2, a stop string, and one that never drafts.
std::vector<Request> mixed_requests(const Tokenizer& tokenizer) {
  std::vector<Request> rs;
  rs.push_back(request(tokenizer, "Once upon a time", 48));
  Request seeded = request(tokenizer, "Lily went to the park", 40);
  seeded.sampling.temperature = 0.8f;
  seeded.sampling.top_p = 0.9f;
  seeded.sampling.seed = 11;
  seeded.logprobs = 2;
  seeded.n = 2;
  rs.push_back(seeded);
  Request stop = request(tokenizer, "The little dog was sad because", 40);
  stop.stop = {" the"};
  rs.push_back(stop);
  Request plain = request(tokenizer, "Once upon a time", 30);
  plain.speculate = false;
  rs.push_back(plain);
  Request logprobs = request(tokenizer, "One day, a bird", 36);
  logprobs.logprobs = 1;
  rs.push_back(logprobs);
  return rs;
}

EngineOptions engine_options() {
  EngineOptions o;
  o.kv_blocks = 128;
  o.max_num_batched_tokens = 48;  // prompts in chunks beside the others' drafts
  o.max_num_seqs = 8;
  return o;
}

TEST(DraftModel, EngineOutputsAreThePlainOnesOnOneToThreeThreads) {
  const Tokenizer& tokenizer = test::stories_tokenizer();
  const std::vector<Request> requests = mixed_requests(tokenizer);
  const Outcome want = run(stories_w4a8(), tokenizer, engine_options(), requests, one_thread());
  ASSERT_EQ(want.requests[2].at(0).finish, FinishReason::stop);
  EngineOptions o = engine_options();
  o.speculative = stories_draft(4);
  ThreadPool two(2), three(3);
  for (ThreadPool* pool : {&one_thread(), &two, &three}) {
    const Outcome got = run(stories_w4a8(), tokenizer, o, requests, *pool);
    expect_same(want, got, std::to_string(pool->size()) + " threads");
    const SpeculationStats& s = got.stats.speculation;
    // Real text, the draft the target's unquantized self: most drafts right, not all.
    EXPECT_GT(s.accepted_tokens, s.draft_tokens / 2);
    EXPECT_LT(s.accepted_tokens, s.draft_tokens);
  }
}

TEST(DraftModel, ATargetDraftingForItselfHasEveryDraftAccepted) {
  // The draft picks as the choice's sampler picks (the argmax, or the seeded draw of the same
  // position with the same penalties): the same model agrees with itself on every draft.
  const Tokenizer& tokenizer = test::stories_tokenizer();
  std::vector<Request> requests = mixed_requests(tokenizer);
  requests.erase(requests.begin() + 3);  // the one that never drafts
  requests[2].sampling.temperature = 1.0f;
  requests[2].sampling.seed = 5;
  requests[2].sampling.frequency_penalty = 0.5f;
  requests[2].sampling.repetition_penalty = 1.2f;
  SpeculativeConfig c = parse_speculate_spec("draft:" + test::stories_dir() + ",k=4");
  ModelOptions quantized;
  quantized.quantize_group = 32;
  load_draft_model(c, tokenizer, stories_w4a8().vocab_size(), quantized);
  EngineOptions o = engine_options();
  const Outcome want = run(stories_w4a8(), tokenizer, o, requests, one_thread());
  o.speculative = c;
  const Outcome got = run(stories_w4a8(), tokenizer, o, requests, one_thread());
  expect_same(want, got, "self-drafted");
  EXPECT_GT(got.stats.speculation.draft_tokens, 100u);
  EXPECT_EQ(got.stats.speculation.accepted_tokens, got.stats.speculation.draft_tokens);
}

TEST(DraftModel, RejectionSamplingVerifiesItsDraftsAsPointMasses) {
  // Under the rejection sampler a draft model's drafts count as point masses (the committed
  // tokens follow the target's distribution whatever drew them): greedy outputs stay the plain
  // ones, and a seeded run repeats itself exactly.
  const Tokenizer& tokenizer = test::stories_tokenizer();
  std::vector<Request> greedy = {request(tokenizer, "Once upon a time", 40),
                                 request(tokenizer, "One day, a bird", 32)};
  const Outcome want = run(stories_w4a8(), tokenizer, engine_options(), greedy, one_thread());
  EngineOptions o = engine_options();
  o.speculative = stories_draft(3);
  o.speculative->acceptance = SpeculativeConfig::Acceptance::rejection_sampler;
  const Outcome got = run(stories_w4a8(), tokenizer, o, greedy, one_thread());
  expect_same(want, got, "greedy, rejection sampler");
  EXPECT_GT(got.stats.speculation.accepted_tokens, 0u);
  std::vector<Request> seeded = mixed_requests(tokenizer);
  const Outcome first = run(stories_w4a8(), tokenizer, o, seeded, one_thread());
  expect_same(first, run(stories_w4a8(), tokenizer, o, seeded, one_thread()), "seeded twice");
}

TEST(DraftModel, PreemptionAndPrefixCachingKeepTheOutputs) {
  // A pool too small for the batch: sequences are preempted mid-speculation and their draft
  // caches rebuilt; repeated prompts hit both prefix caches.
  const Tokenizer& tokenizer = test::stories_tokenizer();
  std::vector<Request> requests;
  for (int i = 0; i < 6; ++i)
    requests.push_back(request(tokenizer, i % 2 ? "Tom and Sam found a big box" : "Mom said", 60));
  requests[3].sampling.temperature = 1.0f;
  requests[3].sampling.seed = 3;
  EngineOptions o = engine_options();
  o.kv_blocks = 14;
  o.max_model_len = 96;
  o.block_size = 8;
  const Outcome want = run(stories_w4a8(), tokenizer, o, requests, one_thread());
  ASSERT_GT(want.stats.preemptions, 0u);
  o.speculative = stories_draft(3);
  const Outcome got = run(stories_w4a8(), tokenizer, o, requests, one_thread());
  EXPECT_GT(got.stats.preemptions, 0u);
  EXPECT_GT(got.stats.prefix_cache_hits, 0u);
  EXPECT_GT(got.stats.speculation.accepted_tokens, 0u);
  expect_same(want, got, "preempted");
}

TEST(DraftModel, ASyntheticModelDraftedByAOneLayerCutOfItself) {
  // Random weights: the cut agrees with the whole model on few tokens, and its drafts are
  // mostly rejected; the outputs stay the plain ones.
  test::ScratchDir scratch;
  SynthOptions s = synth_preset("tiny-llama3");
  s.output_dir = scratch.file("target");
  write_synthetic_model(s);
  s.config.num_hidden_layers = 1;
  s.output_dir = scratch.file("draft");
  write_synthetic_model(s);
  const std::unique_ptr<Model> target = Model::load(scratch.file("target"), {}, &one_thread());
  const Tokenizer tokenizer = Tokenizer::from_directory(scratch.file("target"));
  std::vector<Request> requests = mixed_requests(tokenizer);
  for (Request& r : requests) r.ignore_eos = true;
  EngineOptions o = engine_options();
  const Outcome want = run(*target, tokenizer, o, requests, one_thread());
  o.speculative = parse_speculate_spec("draft:" + scratch.file("draft") + ",k=3");
  load_draft_model(*o.speculative, tokenizer, target->vocab_size());
  ThreadPool two(2);
  const Outcome got = run(*target, tokenizer, o, requests, two);
  expect_same(want, got, "synthetic");
  EXPECT_GT(got.stats.speculation.draft_tokens, 0u);
}

}  // namespace
}  // namespace dq4
