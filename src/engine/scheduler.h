#pragma once
// Which tokens of which sequences run in the next step. Each step fills a token budget: first one
// decode token for every running sequence that has finished its prompt (and its drafts, as far as
// the budget and the free blocks allow), then the next chunk of
// the running sequences still in their prompt, then the waiting sequences in order (preempted
// ones first), each taking as much of its prompt as the budget has left (chunked prefill), while
// blocks and the sequence limit allow. When a running sequence needs a block and none is free,
// the youngest running sequence is preempted: its blocks are freed and it waits to be computed
// again from its tokens. With longrope (Phi-3) a sequence's keys are rotated by the factors of its
// whole length, as transformers rotates them: one that grows past the switch is computed again
// from its tokens with the long factors (transformers drops its cache there too), and cached
// blocks are found only by sequences on the same side of the switch.

#include <cstdint>
#include <deque>
#include <vector>

#include "block_manager.h"
#include "sequence.h"

namespace dq4::engine {

struct ScheduledChunk {
  Sequence* seq = nullptr;
  int64_t start = 0;    // first position computed
  int64_t count = 0;    // tokens computed
  bool sample = false;  // reaches the sequence's last token: its logits give the next token
  int64_t drafts = 0;   // of `count`: drafts appended to the sequence's tokens, verified by rows
};

struct SchedulerLimits {
  int64_t max_num_seqs = 256;
  int64_t max_num_batched_tokens = 512;
  int64_t rope_switch_length = 0;  // Model::rope_switch_length(); 0: no switch
};

class Scheduler {
 public:
  Scheduler(BlockManager& blocks, const SchedulerLimits& limits);

  void add(Sequence* seq);     // to the back of the waiting queue
  void remove(Sequence* seq);  // finished or aborted: out of its queue, blocks freed

  // The next step's chunks; valid until the next call.
  const std::vector<ScheduledChunk>& schedule();
  // After the step's forward and the verification of its drafts (which took the rejected ones
  // off the sequences' tokens): the chunks' tokens still in their sequences are in the cache.
  void complete(const std::vector<ScheduledChunk>& chunks);

  int64_t num_running() const { return static_cast<int64_t>(running_.size()); }
  int64_t num_waiting() const { return static_cast<int64_t>(waiting_.size()); }
  bool empty() const { return running_.empty() && waiting_.empty(); }

  uint64_t preemptions() const { return preemptions_; }
  uint64_t prefix_queries() const { return prefix_queries_; }  // prompt tokens looked up
  uint64_t prefix_hits() const { return prefix_hits_; }        // of which found cached

 private:
  void preempt(Sequence* victim, std::vector<ScheduledChunk>& chunks, int64_t& budget);
  // Frees the sequence's blocks and puts it at the front of the waiting queue.
  void requeue(Sequence* seq, std::vector<ScheduledChunk>& chunks, int64_t& budget);
  bool long_rope(int64_t length) const {
    return limits_.rope_switch_length > 0 && length > limits_.rope_switch_length;
  }
  bool schedule_running(Sequence* seq, std::vector<ScheduledChunk>& chunks, int64_t& budget);

  BlockManager& blocks_;
  SchedulerLimits limits_;
  std::vector<Sequence*> running_;  // in admission order: the back is the youngest
  std::deque<Sequence*> waiting_;
  // schedule()'s: kept across steps (at most max_num_seqs each), so that it allocates nothing.
  std::vector<ScheduledChunk> chunks_;
  std::vector<Sequence*> order_;  // running_ as the step began (preemption edits running_)
  uint64_t preemptions_ = 0, prefix_queries_ = 0, prefix_hits_ = 0;
};

}  // namespace dq4::engine
