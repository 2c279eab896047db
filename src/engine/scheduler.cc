#include "scheduler.h"

#include <algorithm>

namespace dq4::engine {

Scheduler::Scheduler(BlockManager& blocks, const SchedulerLimits& limits)
    : blocks_(blocks), limits_(limits) {
  const auto seqs = static_cast<size_t>(limits.max_num_seqs);
  running_.reserve(seqs);
  chunks_.reserve(seqs);
  order_.reserve(seqs);
}

void Scheduler::add(Sequence* seq) {
  seq->state = Sequence::State::waiting;
  waiting_.push_back(seq);
}

void Scheduler::remove(Sequence* seq) {
  std::erase(running_, seq);
  std::erase(waiting_, seq);
  blocks_.free(seq->blocks);
  seq->state = Sequence::State::finished;
}

void Scheduler::requeue(Sequence* seq, std::vector<ScheduledChunk>& chunks, int64_t& budget) {
  auto chunk = std::find_if(chunks.begin(), chunks.end(),
                            [&](const ScheduledChunk& c) { return c.seq == seq; });
  if (chunk != chunks.end()) {
    budget += chunk->count;
    chunks.erase(chunk);
  }
  seq->tokens.resize(seq->tokens.size() - static_cast<size_t>(seq->drafted));
  seq->drafted = 0;
  std::erase(running_, seq);
  blocks_.free(seq->blocks);
  seq->num_computed = 0;
  seq->state = Sequence::State::waiting;
  waiting_.push_front(seq);
}

void Scheduler::preempt(Sequence* victim, std::vector<ScheduledChunk>& chunks, int64_t& budget) {
  requeue(victim, chunks, budget);
  ++preemptions_;
}

// Schedules the next chunk of a running sequence, preempting younger ones for blocks; false when
// `seq` itself had to be preempted, or went back to the queue to be computed again past the rope
// switch.
bool Scheduler::schedule_running(Sequence* seq, std::vector<ScheduledChunk>& chunks,
                                 int64_t& budget) {
  const auto length = static_cast<int64_t>(seq->tokens.size());
  if (!seq->long_rope && long_rope(length)) {
    requeue(seq, chunks, budget);  // admitted again below, with the long factors
    return false;
  }
  const bool decode = seq->pending() == 1;
  int64_t drafts = decode ? std::min<int64_t>(seq->drafts.size(), budget - 1) : 0;
  // Drafts past the switch would be verified with factors the sequence does not have yet.
  if (!seq->long_rope && limits_.rope_switch_length > 0)
    drafts = std::min(drafts, limits_.rope_switch_length - length);
  int64_t count = std::min(seq->pending(), budget) + drafts;
  while (!blocks_.allocate(seq->blocks, seq->num_computed + count)) {
    // Drafts never cost another sequence its blocks.
    if (drafts > 0) {
      count -= drafts;
      drafts = 0;
      continue;
    }
    Sequence* victim = running_.back();
    preempt(victim, chunks, budget);
    if (victim == seq) return false;
  }
  seq->tokens.insert(seq->tokens.end(), seq->drafts.begin(), seq->drafts.begin() + drafts);
  seq->drafted = drafts;
  chunks.push_back({seq, seq->num_computed, count,
                    seq->num_computed + count == static_cast<int64_t>(seq->tokens.size()), drafts});
  budget -= count;
  return true;
}

const std::vector<ScheduledChunk>& Scheduler::schedule() {
  std::vector<ScheduledChunk>& chunks = chunks_;
  chunks.clear();
  int64_t budget = limits_.max_num_batched_tokens;
  const uint64_t preemptions_before = preemptions_;
  // Decode tokens first, so that prompts never stall the sequences already generating.
  for (bool decode : {true, false}) {
    order_.assign(running_.begin(), running_.end());
    for (Sequence* seq : order_) {
      if (budget == 0) break;
      if (seq->state != Sequence::State::running || (seq->pending() == 1) != decode) continue;
      schedule_running(seq, chunks, budget);
    }
  }
  // After a preemption the pool is short: admitting more would only preempt again.
  while (preemptions_ == preemptions_before && budget > 0 && !waiting_.empty() &&
         static_cast<int64_t>(running_.size()) < limits_.max_num_seqs) {
    Sequence* seq = waiting_.front();
    seq->long_rope = long_rope(static_cast<int64_t>(seq->tokens.size()));
    const PrefixHit hit = blocks_.find_prefix(seq->tokens, seq->long_rope);
    const int64_t cached = static_cast<int64_t>(hit.blocks.size()) * blocks_.block_size();
    const int64_t count = std::min(static_cast<int64_t>(seq->tokens.size()) - cached, budget);
    if (!blocks_.allocate(seq->blocks, cached + count, hit)) break;
    waiting_.pop_front();
    if (blocks_.prefix_caching()) {
      prefix_queries_ += seq->tokens.size();
      prefix_hits_ += cached;
    }
    if (!seq->scheduled_before) seq->first_cached_tokens = cached;
    seq->num_computed = cached;
    seq->state = Sequence::State::running;
    running_.push_back(seq);
    chunks.push_back(
        {seq, cached, count, cached + count == static_cast<int64_t>(seq->tokens.size())});
    budget -= count;
  }
  return chunks;
}

void Scheduler::complete(const std::vector<ScheduledChunk>& chunks) {
  for (const ScheduledChunk& c : chunks) {
    c.seq->num_computed = std::min(c.start + c.count, static_cast<int64_t>(c.seq->tokens.size()));
    c.seq->scheduled_before = true;
    blocks_.cache_full_blocks(c.seq->blocks, c.seq->tokens, c.seq->num_computed, c.seq->long_rope);
  }
}

}  // namespace dq4::engine
