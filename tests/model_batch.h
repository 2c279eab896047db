#pragma once
// Several sequences of one model in one paged cache, run through Model::forward as a server
// would: every prompt in one batch, then decode steps of one token per sequence. Nothing is
// allocated after construction, so that a test can count what forward() allocates.

#include <cstdint>
#include <span>
#include <vector>

#include "dq4/kernels/thread_pool.h"
#include "dq4/model/kv_cache.h"
#include "dq4/model/model.h"

namespace dq4::test {

class BatchRunner {
 public:
  BatchRunner(Model& model, int sequences, int64_t prompt_tokens, int64_t decode_steps,
              ThreadPool& pool)
      : model_(model),
        pool_(pool),
        prompt_(prompt_tokens),
        cache_(model.kv_shape(sequences * blocks_per_sequence(prompt_tokens + decode_steps),
                              kBlockSize)) {
    const int64_t tokens = prompt_tokens + decode_steps;
    const int64_t blocks = blocks_per_sequence(tokens);
    for (int s = 0; s < sequences; ++s) {
      std::vector<int32_t> ids(static_cast<size_t>(tokens));
      for (int64_t i = 0; i < tokens; ++i)
        ids[static_cast<size_t>(i)] =
            static_cast<int32_t>(1 + (s * 37 + i * 11) % (model.vocab_size() - 1));
      tokens_.push_back(std::move(ids));
      std::vector<int32_t> table(static_cast<size_t>(blocks));
      for (int64_t b = 0; b < blocks; ++b)  // interleaved: tables are not contiguous
        table[static_cast<size_t>(b)] = static_cast<int32_t>(b * sequences + s);
      tables_.push_back(std::move(table));
    }
    batch_.resize(static_cast<size_t>(sequences));
    logits_.resize(static_cast<size_t>(sequences * prompt_tokens * model.vocab_size()));
  }

  // Every prompt in one forward, logits of every row.
  void prefill() {
    for (size_t s = 0; s < batch_.size(); ++s)
      batch_[s] = input(s, 0, prompt_, SequenceInput::Logits::all);
    done_ = prompt_;
    model_.forward(batch_, cache_, logits_.data(), &pool_);
  }

  // The next token of every sequence, logits of each.
  void decode_step() {
    for (size_t s = 0; s < batch_.size(); ++s)
      batch_[s] = input(s, done_, 1, SequenceInput::Logits::last);
    done_ += 1;
    model_.forward(batch_, cache_, logits_.data(), &pool_);
  }

 private:
  static constexpr int64_t kBlockSize = 4;
  static int64_t blocks_per_sequence(int64_t tokens) {
    return (tokens + kBlockSize - 1) / kBlockSize;
  }

  SequenceInput input(size_t s, int64_t start, int64_t count, SequenceInput::Logits logits) const {
    SequenceInput in;
    in.tokens =
        std::span(tokens_[s]).subspan(static_cast<size_t>(start), static_cast<size_t>(count));
    in.start = start;
    in.block_table = tables_[s];
    in.logits = logits;
    return in;
  }

  Model& model_;
  ThreadPool& pool_;
  int64_t prompt_, done_ = 0;
  KvCache cache_;
  std::vector<std::vector<int32_t>> tokens_, tables_;
  std::vector<SequenceInput> batch_;
  std::vector<float> logits_;
};

}  // namespace dq4::test
