// An Engine decode step allocates nothing once warmed up. Its own executable: it replaces the
// global operator new and delete to count every allocation, on every thread.
//
// Counted: all of Engine::step() for 32 steps in which every request decodes one token:
// scheduling, building the batch, the forward of a fake model (which allocates nothing),
// sampling (penalties included; constrained choices masked) on the pool's threads, committing the
// tokens, and handing each request its event through a callback that keeps nothing. Not counted:
// text. These requests ask for token ids only (detokenize = false): each event's new text is a
// new string by design, and the tokenizer's decode builds it.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "dq4/engine/engine.h"
#include "fake_model.h"
#include "sequence_set_constraint.h"
#include "stories_fixture.h"

namespace {

std::atomic<bool> counting{false};
std::atomic<int64_t> allocations{0};

void* allocate(std::size_t size, std::size_t alignment = 0) noexcept {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  if (size == 0) size = 1;
  if (alignment <= alignof(std::max_align_t)) return std::malloc(size);
  return std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
}

void* allocate_or_throw(std::size_t size, std::size_t alignment = 0) {
  void* p = allocate(size, alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

void* operator new(std::size_t n) { return allocate_or_throw(n); }
void* operator new[](std::size_t n) { return allocate_or_throw(n); }
void* operator new(std::size_t n, std::align_val_t a) {
  return allocate_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return allocate_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return allocate(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return allocate(n); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

namespace dq4 {
namespace {

using test::FakeModel;

constexpr int64_t kVocab = 512;
constexpr int kRequests = 7;
constexpr int kSteps = 32;

// Allocations made while `f` runs.
template <class F>
int64_t allocations_in(F f) {
  allocations = 0;
  counting = true;
  f();
  counting = false;
  return allocations.load();
}

TEST(EngineAllocations, TheCounterSeesAnAllocation) {
  static void* volatile sink = nullptr;
  EXPECT_EQ(allocations_in([] { sink = ::operator new(64); }), 1);
  ::operator delete(sink);
}

// Per request: the tokens its events delivered, and whether any event broke the pattern of one
// new token per choice per step. Filled in place: the callback allocates nothing.
struct Delivered {
  int64_t tokens = 0;
  bool unexpected = false;
  bool finished = false;
};

Request decoding_request(int i) {
  Request r;
  for (int t = 0; t < 9 + 5 * i; ++t) r.prompt.push_back(3 + (t * 31 + i * 17) % (kVocab - 3));
  r.max_tokens = 200;
  r.detokenize = false;
  r.ignore_eos = true;
  r.min_tokens = i == 1 ? 100 : 0;
  if (i == 2) {  // stop ids held off by min_tokens until after the steps counted
    r.stop_token_ids = {7, 8};
    r.min_tokens = 150;
  }
  r.sampling.seed = 100 + i;
  r.sampling.temperature = i % 3 == 0 ? 0.0f : 0.8f;
  r.sampling.top_k = i == 4 ? 40 : 0;
  r.sampling.top_p = i == 4 ? 0.9f : 1.0f;
  r.sampling.min_p = i == 5 ? 0.05f : 0.0f;
  if (i % 2 == 1) {  // the penalties
    r.sampling.repetition_penalty = 1.2f;
    r.sampling.presence_penalty = 0.5f;
    r.sampling.frequency_penalty = 0.3f;
  }
  if (i == 3) r.n = 2;
  if (i == 6) {  // constrained (a matcher that allocates nothing): masks and matchers per choice
    std::vector<std::vector<TokenId>> sequences(3);
    for (size_t k = 0; k < sequences.size(); ++k)
      for (int t = 0; t < 200; ++t)
        sequences[k].push_back(3 + (t * 13 + static_cast<int>(k) * (t % 7)) % (kVocab - 3));
    r.constraint =
        std::make_shared<test::SequenceSetConstraint>(sequences, kVocab, std::vector<TokenId>{2});
    r.n = 2;
    r.min_tokens = 0;
  }
  return r;
}

TEST(EngineAllocations, ADecodeStepAllocatesNothingAfterWarmUp) {
  auto model = std::make_unique<FakeModel>(kVocab, 1024, std::vector<TokenId>{2});
  model->record_batches(false);
  EngineOptions o;
  o.kv_blocks = 512;
  o.block_size = 4;  // the steps cross block boundaries: new blocks, prefix-cache entries
  o.max_num_seqs = 16;
  o.max_num_batched_tokens = 64;
  Engine engine(std::move(model), test::stories_tokenizer(), o);
  std::vector<Delivered> delivered(kRequests);
  std::vector<uint64_t> ids;
  for (int i = 0; i < kRequests; ++i) {
    const Request r = decoding_request(i);
    ids.push_back(engine.add_request(r, [&delivered, i, n = r.n](RequestOutput&& out) {
      Delivered& d = delivered[static_cast<size_t>(i)];
      d.finished = out.finished;
      if (static_cast<int>(out.choices.size()) != n) d.unexpected = true;
      for (const ChoiceDelta& c : out.choices) {
        d.tokens += static_cast<int64_t>(c.token_ids.size());
        if (c.token_ids.size() != 1 || !c.text.empty()) d.unexpected = true;
      }
    }));
  }
  // Warm-up: every prompt computed, every choice decoding, the buffers grown.
  for (int step = 0; step < 8; ++step) ASSERT_TRUE(engine.step());
  ASSERT_EQ(engine.stats().running, kRequests + 2);
  std::vector<int64_t> before;
  for (const Delivered& d : delivered) before.push_back(d.tokens);
  for (Delivered& d : delivered) d.unexpected = false;

  const int64_t count = allocations_in([&] {
    for (int step = 0; step < kSteps; ++step) engine.step();
  });
  EXPECT_EQ(count, 0) << "allocations in " << kSteps << " decode steps";

  for (int i = 0; i < kRequests; ++i) {
    const Delivered& d = delivered[static_cast<size_t>(i)];
    const int choices = decoding_request(i).n;
    EXPECT_EQ(d.tokens - before[static_cast<size_t>(i)], kSteps * choices) << "request " << i;
    EXPECT_FALSE(d.unexpected) << "request " << i;
    EXPECT_FALSE(d.finished) << "request " << i;
  }
  for (uint64_t id : ids) engine.abort(id);
  while (engine.has_unfinished()) engine.step();
}

// Every choice drafts (drafts counted in, rejected and rolled back): request 0's drafts replay its
// own greedy continuation (all accepted), the others' are wrong.
void expect_speculative_steps_allocate_nothing(SpeculativeConfig::Acceptance acceptance) {
  EngineOptions o;
  o.kv_blocks = 512;
  o.block_size = 4;
  o.max_num_seqs = 16;
  o.max_num_batched_tokens = 64;
  std::vector<TokenId> reference = decoding_request(0).prompt;
  {
    FakeModel plain(kVocab, 1024, std::vector<TokenId>{2});
    const std::vector<TokenId> greedy = plain.reference_greedy(reference, 200);
    reference.insert(reference.end(), greedy.begin(), greedy.end());
  }
  SpeculativeConfig spec;
  spec.method = SpeculativeConfig::Method::replay;
  spec.num_speculative_tokens = 3;
  spec.acceptance = acceptance;
  spec.replay_tokens = std::make_shared<std::vector<TokenId>>(reference);
  o.speculative = spec;
  o.speculative_row_budget = 64;
  auto model = std::make_unique<FakeModel>(kVocab, 1024, std::vector<TokenId>{2});
  model->record_batches(false);
  Engine engine(std::move(model), test::stories_tokenizer(), o);
  std::vector<int64_t> tokens(kRequests);
  std::vector<uint64_t> ids;
  for (int i = 0; i < kRequests; ++i)
    ids.push_back(engine.add_request(decoding_request(i), [&tokens, i](RequestOutput&& out) {
      for (const ChoiceDelta& c : out.choices)
        tokens[static_cast<size_t>(i)] += static_cast<int64_t>(c.token_ids.size());
    }));
  for (int step = 0; step < 8; ++step) ASSERT_TRUE(engine.step());
  const int64_t before = tokens[0];
  const int64_t count = allocations_in([&] {
    for (int step = 0; step < kSteps; ++step) engine.step();
  });
  EXPECT_EQ(count, 0) << "allocations in " << kSteps << " speculative decode steps";
  EXPECT_EQ(tokens[0] - before, 4 * kSteps);  // three accepted drafts and one more per step
  EXPECT_GT(engine.stats().speculation.draft_tokens, engine.stats().speculation.accepted_tokens);
  for (uint64_t id : ids) engine.abort(id);
  while (engine.has_unfinished()) engine.step();
}

TEST(EngineAllocations, ASpeculativeDecodeStepAllocatesNothingAfterWarmUp) {
  expect_speculative_steps_allocate_nothing(SpeculativeConfig::Acceptance::match);
}

TEST(EngineAllocations, ARejectionSamplingStepAllocatesNothingAfterWarmUp) {
  expect_speculative_steps_allocate_nothing(SpeculativeConfig::Acceptance::rejection_sampler);
}

}  // namespace
}  // namespace dq4
