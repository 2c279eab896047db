#pragma once
// A stand-in for dq4::Model in engine tests. Each new token is written into the KV cache at its
// position (through the block table), and a row's logits are a pseudo-random function of every
// token read back from the cache for positions [0, row]: a wrong block, a block shared by mistake
// or a stale entry changes what comes out. reference_logits() computes the same without a cache.

#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "dq4/engine/engine.h"

namespace dq4::test {

class FakeModel : public EngineModel {
 public:
  // `eos` gets a large logit after every `eos_every` tokens of a sequence (0 = never likely).
  FakeModel(int64_t vocab, int64_t context, std::vector<TokenId> eos, int64_t eos_every = 0);

  int64_t vocab_size() const override { return vocab_; }
  int64_t max_context() const override { return context_; }
  const std::vector<TokenId>& eos_ids() const override { return eos_; }
  KvCacheShape kv_shape(int64_t blocks, int64_t block_size, attention::KvType type) const override;
  void forward(std::span<const SequenceInput> batch, KvCache& cache, float* logits) override;

  // The logits after `tokens` (a whole sequence), as forward() computes them from the cache.
  void reference_logits(std::span<const TokenId> tokens, float* row) const;
  // Greedy generation of `max_tokens` (stopping after an EOS) by reference_logits alone.
  std::vector<TokenId> reference_greedy(std::vector<TokenId> prompt, int64_t max_tokens) const;

  struct Row {
    int64_t start = 0, count = 0;
    SequenceInput::Logits logits = SequenceInput::Logits::none;
  };
  // Every forward's batch, in order, while recording (the default). Not recording, forward()
  // allocates nothing.
  std::vector<std::vector<Row>> batches() const;
  void record_batches(bool on) { recording_ = on; }

 private:
  void logits_of(std::span<const float> history, float* row) const;

  int64_t vocab_, context_;
  std::vector<TokenId> eos_;
  int64_t eos_every_;
  bool recording_ = true;
  std::vector<float> history_;  // forward()'s: a sequence's tokens read back from the cache
  mutable std::mutex mutex_;
  std::vector<std::vector<Row>> batches_;
};

}  // namespace dq4::test
