#include "fake_model.h"

#include <algorithm>
#include <string>

namespace dq4::test {

namespace {

uint64_t mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ull;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dull;
  x ^= x >> 33;
  return x;
}

}  // namespace

FakeModel::FakeModel(int64_t vocab, int64_t context, std::vector<TokenId> eos, int64_t eos_every)
    : vocab_(vocab), context_(context), eos_(std::move(eos)), eos_every_(eos_every) {
  history_.reserve(static_cast<size_t>(context));
}

KvCacheShape FakeModel::kv_shape(int64_t blocks, int64_t block_size, attention::KvType) const {
  KvCacheShape s;
  s.layers = s.kv_heads = s.head_dim = 1;
  s.block_size = block_size;
  s.blocks = blocks;
  return s;
}

void FakeModel::logits_of(std::span<const float> history, float* row) const {
  uint64_t h = 0x1234567;
  for (float t : history) h = mix(h ^ static_cast<uint64_t>(t));
  for (int64_t v = 0; v < vocab_; ++v)
    row[v] =
        static_cast<float>(mix(h + static_cast<uint64_t>(v)) >> 40) / static_cast<float>(1 << 24);
  const bool eos_now = eos_every_ > 0 && static_cast<int64_t>(history.size()) % eos_every_ == 0;
  for (TokenId e : eos_) row[e] = eos_now ? 2.0f : -2.0f;
}

void FakeModel::reference_logits(std::span<const TokenId> tokens, float* row) const {
  std::vector<float> history(tokens.begin(), tokens.end());
  logits_of(history, row);
}

std::vector<TokenId> FakeModel::reference_greedy(std::vector<TokenId> tokens,
                                                 int64_t max_tokens) const {
  std::vector<TokenId> out;
  std::vector<float> row(vocab_);
  while (static_cast<int64_t>(out.size()) < max_tokens) {
    reference_logits(tokens, row.data());
    const TokenId next =
        static_cast<TokenId>(std::max_element(row.begin(), row.end()) - row.begin());
    out.push_back(next);
    tokens.push_back(next);
    if (std::find(eos_.begin(), eos_.end(), next) != eos_.end()) break;
  }
  return out;
}

void FakeModel::forward(std::span<const SequenceInput> batch, KvCache& cache, float* logits) {
  std::vector<Row> rows;
  if (recording_) rows.reserve(batch.size());
  float* keys = static_cast<float*>(cache.keys(0));
  const int64_t bs = cache.block_size();
  for (const SequenceInput& in : batch) {
    if (recording_) rows.push_back({in.start, static_cast<int64_t>(in.tokens.size()), in.logits});
    const int64_t end = in.start + static_cast<int64_t>(in.tokens.size());
    if (static_cast<int64_t>(in.block_table.size()) * bs < end)
      throw Error("fake model: block table too short");
    auto slot = [&](int64_t p) -> float& {
      return keys[in.block_table[p / bs] * cache.block_stride() + p % bs];
    };
    for (size_t i = 0; i < in.tokens.size(); ++i)
      slot(in.start + i) = static_cast<float>(in.tokens[i]);
    auto emit = [&](int64_t last) {
      history_.resize(static_cast<size_t>(last + 1));
      for (int64_t p = 0; p <= last; ++p) history_[p] = slot(p);
      logits_of(history_, logits);
      logits += vocab_;
    };
    if (in.logits == SequenceInput::Logits::last) emit(end - 1);
    if (in.logits == SequenceInput::Logits::all)
      for (int64_t p = in.start; p < end; ++p) emit(p);
  }
  if (!recording_) return;
  std::lock_guard lock(mutex_);
  batches_.push_back(std::move(rows));
}

std::vector<std::vector<FakeModel::Row>> FakeModel::batches() const {
  std::lock_guard lock(mutex_);
  return batches_;
}

}  // namespace dq4::test
