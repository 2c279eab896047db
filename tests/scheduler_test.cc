// Scheduling decisions: the token budget, decode before prefill, chunked prefill, the sequence
// limit, admission by free blocks and preemption of the youngest sequence.
#include "scheduler.h"

#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <vector>

namespace dq4::engine {
namespace {

std::unique_ptr<Sequence> make_sequence(int prompt, TokenId first = 100) {
  auto seq = std::make_unique<Sequence>();
  seq->tokens.resize(prompt);
  std::iota(seq->tokens.begin(), seq->tokens.end(), first);
  seq->prompt_len = prompt;
  return seq;
}

// What the engine does after a step: the chunks are computed, sampled ones get a token.
void run(Scheduler& s, const std::vector<ScheduledChunk>& chunks) {
  s.complete(chunks);
  for (const ScheduledChunk& c : chunks)
    if (c.sample) c.seq->tokens.push_back(7);
}

int64_t total_tokens(const std::vector<ScheduledChunk>& chunks) {
  int64_t n = 0;
  for (const ScheduledChunk& c : chunks) n += c.count;
  return n;
}

TEST(Scheduler, ChunksALongPromptAndDecodesOthersFirst) {
  BlockManager bm(64, 4, false);
  Scheduler s(bm, {8, 16});
  auto a = make_sequence(5);
  s.add(a.get());
  auto chunks = s.schedule();
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].count, 5);
  EXPECT_TRUE(chunks[0].sample);
  run(s, chunks);

  auto b = make_sequence(40, 300);  // longer than the budget
  s.add(b.get());
  chunks = s.schedule();
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0].seq, a.get());  // a's decode token first
  EXPECT_EQ(chunks[0].count, 1);
  EXPECT_EQ(chunks[0].start, 5);
  EXPECT_EQ(chunks[1].seq, b.get());  // then what the budget leaves of b's prompt
  EXPECT_EQ(chunks[1].start, 0);
  EXPECT_EQ(chunks[1].count, 15);
  EXPECT_FALSE(chunks[1].sample);
  run(s, chunks);

  chunks = s.schedule();  // a decodes again; b's next chunk
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0].seq, a.get());
  EXPECT_EQ(chunks[1].start, 15);
  EXPECT_EQ(chunks[1].count, 15);
  run(s, chunks);
  chunks = s.schedule();
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[1].start, 30);
  EXPECT_EQ(chunks[1].count, 10);
  EXPECT_TRUE(chunks[1].sample);
  EXPECT_EQ(total_tokens(chunks), 11);
  run(s, chunks);
  EXPECT_EQ(s.num_running(), 2);
  EXPECT_EQ(s.num_waiting(), 0);
}

TEST(Scheduler, KeepsToTheSequenceLimit) {
  BlockManager bm(64, 4, false);
  Scheduler s(bm, {2, 100});
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int i = 0; i < 3; ++i) {
    seqs.push_back(make_sequence(3 + i));
    s.add(seqs.back().get());
  }
  auto chunks = s.schedule();
  EXPECT_EQ(chunks.size(), 2u);
  EXPECT_EQ(s.num_running(), 2);
  EXPECT_EQ(s.num_waiting(), 1);
  run(s, chunks);
  s.remove(seqs[0].get());  // finished
  EXPECT_EQ(seqs[0]->blocks.blocks.size(), 0u);
  chunks = s.schedule();
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0].seq, seqs[1].get());
  EXPECT_EQ(chunks[1].seq, seqs[2].get());
  EXPECT_EQ(chunks[1].count, 5);
}

TEST(Scheduler, AdmitsOnlyWhatTheFreeBlocksHold) {
  BlockManager bm(4, 4, false);
  Scheduler s(bm, {8, 100});
  auto a = make_sequence(9);  // 3 blocks
  auto b = make_sequence(6);  // 2 blocks: must wait
  s.add(a.get());
  s.add(b.get());
  auto chunks = s.schedule();
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].seq, a.get());
  EXPECT_EQ(s.num_waiting(), 1);
  run(s, chunks);
  s.remove(a.get());
  EXPECT_EQ(bm.free_blocks(), 4);
  chunks = s.schedule();
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].seq, b.get());
}

TEST(Scheduler, PreemptsTheYoungestWhenBlocksRunOut) {
  BlockManager bm(4, 4, false);
  Scheduler s(bm, {8, 100});
  auto a = make_sequence(8);  // 2 blocks, full
  auto b = make_sequence(8);  // 2 blocks, full
  s.add(a.get());
  s.add(b.get());
  auto chunks = s.schedule();
  ASSERT_EQ(chunks.size(), 2u);
  run(s, chunks);  // both now hold 9 tokens: each needs a third block for its next step
  EXPECT_EQ(bm.free_blocks(), 0);
  chunks = s.schedule();
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].seq, a.get());  // the older goes on
  EXPECT_EQ(s.preemptions(), 1u);
  EXPECT_EQ(b->state, Sequence::State::waiting);
  EXPECT_EQ(b->num_computed, 0);
  EXPECT_TRUE(b->blocks.blocks.empty());
  EXPECT_EQ(s.num_waiting(), 1);
  run(s, chunks);
  s.remove(a.get());
  // b is recomputed from all its tokens: prompt and the token it generated.
  chunks = s.schedule();
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].seq, b.get());
  EXPECT_EQ(chunks[0].start, 0);
  EXPECT_EQ(chunks[0].count, 9);
  EXPECT_TRUE(chunks[0].sample);
}

TEST(Scheduler, TheYoungestPreemptsItselfWhenItIsTheOneShort) {
  BlockManager bm(3, 4, false);
  Scheduler s(bm, {8, 100});
  auto a = make_sequence(3);  // 1 block, still enough after its first token
  auto b = make_sequence(8);  // 2 blocks, full after its prompt
  s.add(a.get());
  s.add(b.get());
  auto chunks = s.schedule();
  ASSERT_EQ(chunks.size(), 2u);
  run(s, chunks);
  chunks = s.schedule();
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].seq, a.get());
  EXPECT_EQ(b->state, Sequence::State::waiting);
  EXPECT_EQ(s.preemptions(), 1u);
  EXPECT_EQ(bm.used_blocks(), 1);
}

TEST(Scheduler, FindsCachedPrefixesAndCountsThem) {
  BlockManager bm(16, 4, true);
  Scheduler s(bm, {8, 100});
  auto a = make_sequence(10);
  s.add(a.get());
  auto chunks = s.schedule();
  run(s, chunks);
  auto b = make_sequence(10);  // the same prompt: 2 full blocks cached
  s.add(b.get());
  chunks = s.schedule();
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[1].seq, b.get());
  EXPECT_EQ(chunks[1].start, 8);
  EXPECT_EQ(chunks[1].count, 2);
  EXPECT_EQ(b->blocks.blocks[0], a->blocks.blocks[0]);
  EXPECT_EQ(b->first_cached_tokens, 8);
  EXPECT_EQ(s.prefix_queries(), 20u);
  EXPECT_EQ(s.prefix_hits(), 8u);
}

}  // namespace
}  // namespace dq4::engine
