// Phi-3's longrope through the engine and a Session: every key is rotated by the factors of the
// sequence's whole length, as transformers rotates it (a sequence runs its prompt in one pass, and
// the cache is computed again when generation crosses the switch), whatever the prefill chunks,
// the prefix cache, speculation or a decode that crosses the switch.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "dq4/convert/synth.h"
#include "dq4/engine/engine.h"
#include "dq4/engine/session.h"
#include "dq4/engine/speculation.h"
#include "dq4/kernels/thread_pool.h"
#include "dq4/model/model.h"
#include "dq4/tokenizer/tokenizer.h"
#include "safetensors_writer.h"

namespace dq4 {
namespace {

ThreadPool& one_thread() {
  static ThreadPool pool(1);
  return pool;
}

// tiny-phi3: longrope with a switch at 256 tokens (original_max_position_embeddings), long
// factors up to 4x the short ones.
const std::string& phi3_dir() {
  static const test::ScratchDir scratch;
  static const std::string dir = [] {
    SynthOptions o = synth_preset("tiny-phi3");
    o.dtype = Dtype::F32;
    o.output_dir = scratch.file("tiny-phi3");
    write_synthetic_model(o);
    return o.output_dir;
  }();
  return dir;
}

Model& phi3() {
  static const std::unique_ptr<Model> model = Model::load(phi3_dir(), {}, &one_thread());
  return *model;
}

const Tokenizer& phi3_tokenizer() {
  static const Tokenizer tokenizer = Tokenizer::from_directory(phi3_dir());
  return tokenizer;
}

std::vector<TokenId> prompt(int64_t length, uint32_t seed) {
  std::vector<TokenId> ids;
  for (int64_t i = 0; i < length; ++i) {
    seed = seed * 1103515245u + 12345u;
    ids.push_back(static_cast<TokenId>(3 + (seed >> 16) % 360));
  }
  return ids;
}

TokenId argmax(std::span<const float> logits) {
  return static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// Greedy tokens by transformers' rule: each next token from a forward of the whole sequence in
// one pass, over a fresh cache.
std::vector<TokenId> reference(std::vector<TokenId> tokens, int64_t n) {
  Model& m = phi3();
  std::vector<TokenId> out;
  std::vector<float> logits(static_cast<size_t>(m.vocab_size()));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t blocks = (static_cast<int64_t>(tokens.size()) + 15) / 16;
    KvCache cache(m.kv_shape(blocks, 16));
    std::vector<int32_t> table(static_cast<size_t>(blocks));
    for (int64_t b = 0; b < blocks; ++b) table[static_cast<size_t>(b)] = static_cast<int32_t>(b);
    const SequenceInput in{tokens, 0, table, SequenceInput::Logits::last};
    m.forward(std::span(&in, 1), cache, logits.data(), &one_thread());
    out.push_back(argmax(logits));
    tokens.push_back(out.back());
  }
  return out;
}

// The greedy tokens of each prompt, run in order through one engine (each to its end before the
// next is added, so that later ones find the earlier ones' blocks in the prefix cache); `stats`,
// when given, gets the engine's at the end.
std::vector<std::vector<TokenId>> run_engine(const std::vector<std::vector<TokenId>>& prompts,
                                             int64_t n, const EngineOptions& options,
                                             EngineStats* stats = nullptr) {
  Engine engine(phi3(), phi3_tokenizer(), options, &one_thread());
  std::vector<std::vector<TokenId>> outputs;
  for (const std::vector<TokenId>& p : prompts) {
    Request r;
    r.prompt = p;
    r.sampling.temperature = 0;
    r.ignore_eos = true;
    r.max_tokens = n;
    std::vector<TokenId> tokens;
    engine.add_request(r, [&](RequestOutput&& out) {
      for (const ChoiceDelta& d : out.choices)
        tokens.insert(tokens.end(), d.token_ids.begin(), d.token_ids.end());
    });
    while (engine.has_unfinished()) EXPECT_TRUE(engine.step());
    outputs.push_back(tokens);
  }
  if (stats != nullptr) *stats = engine.stats();
  return outputs;
}

EngineOptions options() {
  EngineOptions o;
  o.kv_blocks = 64;
  return o;
}

TEST(Longrope, TheSwitchIsTheOriginalContext) { EXPECT_EQ(phi3().rope_switch_length(), 256); }

// A 250-token prompt generating 16 tokens crosses the switch at its 257th token.
TEST(Longrope, DecodeAcrossTheSwitchComputesTheCacheAgain) {
  const std::vector<TokenId> p = prompt(250, 1);
  const std::vector<TokenId> want = reference(p, 16);
  EXPECT_EQ(run_engine({p}, 16, options())[0], want);
  // With drafts (prompt lookup over a prompt that repeats itself), which never reach past the
  // switch before the sequence does.
  const std::vector<TokenId> period = prompt(50, 2);
  std::vector<TokenId> repeating;
  for (int i = 0; i < 5; ++i) repeating.insert(repeating.end(), period.begin(), period.end());
  repeating.resize(248);
  EngineOptions o = options();
  o.speculative = parse_speculate_spec("ngram:k=4,min=1,max=3");
  EngineStats stats;
  EXPECT_EQ(run_engine({repeating}, 16, o, &stats)[0], reference(repeating, 16));
  EXPECT_GT(stats.speculation.draft_tokens, 0u);
}

// A draft model that is the target itself proposes what the target picks, across the switch too:
// its own cache follows the same rule.
TEST(Longrope, ADraftModelLikeTheTargetHasEveryDraftAccepted) {
  const std::vector<TokenId> p = prompt(246, 7);
  EngineOptions o = options();
  SpeculativeConfig c;
  c.method = SpeculativeConfig::Method::draft_model;
  c.num_speculative_tokens = 4;
  c.model = phi3_dir();
  c.draft = std::shared_ptr<Model>(&phi3(), [](Model*) {});
  o.speculative = c;
  EngineStats stats;
  EXPECT_EQ(run_engine({p}, 24, o, &stats)[0], reference(p, 24));
  const SpeculationStats& s = stats.speculation;
  EXPECT_GT(s.draft_tokens, 8u);
  EXPECT_EQ(s.accepted_tokens, s.draft_tokens);
}

// A prompt longer than the switch in chunks of 64: every chunk runs the long factors.
TEST(Longrope, ChunkedPrefillOfALongPrompt) {
  const std::vector<TokenId> p = prompt(300, 3);
  EngineOptions o = options();
  o.max_num_batched_tokens = 64;
  o.max_num_seqs = 4;
  EXPECT_EQ(run_engine({p}, 8, o)[0], reference(p, 8));
}

// A short prompt's cached blocks are not reused by a long prompt sharing its start, nor the long
// one's by the short one run again.
TEST(Longrope, PrefixCacheKeepsTheTwoFactorSetsApart) {
  const std::vector<TokenId> short_prompt = prompt(200, 4);
  std::vector<TokenId> long_prompt = short_prompt;
  const std::vector<TokenId> more = prompt(100, 5);
  long_prompt.insert(long_prompt.end(), more.begin(), more.end());
  const auto got = run_engine({short_prompt, long_prompt, short_prompt}, 8, options());
  const std::vector<TokenId> want_short = reference(short_prompt, 8);
  EXPECT_EQ(got[0], want_short);
  EXPECT_EQ(got[1], reference(long_prompt, 8));
  EXPECT_EQ(got[2], want_short);
}

// A Session fed past the switch a token at a time gives what one pass over the sequence gives.
TEST(Longrope, SessionAcrossTheSwitch) {
  std::vector<TokenId> tokens = prompt(254, 6);
  const std::vector<TokenId> want = reference(tokens, 4);
  Session session(phi3(), 512, attention::KvType::f32, 64, &one_thread());
  std::vector<TokenId> got;
  std::span<const float> logits = session.feed(tokens);
  for (int i = 0; i < 4; ++i) {
    got.push_back(argmax(logits));
    const TokenId next = got.back();
    logits = session.feed(std::span(&next, 1));
  }
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace dq4
