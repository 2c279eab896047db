// Session: one sequence over a KV cache of its own, its blocks laid out in order.

#include "dq4/engine/session.h"

#include <algorithm>

#include "dq4/kernels/error.h"

namespace dq4 {

Session::Session(Model& model, int64_t context, attention::KvType kv_type, int64_t chunk,
                 ThreadPool* pool)
    : model_(&model),
      pool_(pool),
      context_(std::min(context, model.max_context())),
      chunk_(std::max<int64_t>(chunk, 1)) {
  if (context <= 0) throw Error("context: must be positive, got " + std::to_string(context));
  constexpr int64_t kBlock = 16;
  const int64_t blocks = (context_ + kBlock - 1) / kBlock;
  cache_ = KvCache(model.kv_shape(blocks, kBlock, kv_type));
  for (int64_t b = 0; b < blocks; ++b) block_table_.push_back(static_cast<int32_t>(b));
}

void Session::truncate(int64_t keep) {
  if (keep < static_cast<int64_t>(tokens_.size())) tokens_.resize(static_cast<size_t>(keep));
}

std::span<const float> Session::feed(std::span<const int32_t> tokens) { return run(tokens, false); }

std::span<const float> Session::feed_all(std::span<const int32_t> tokens) {
  return run(tokens, true);
}

std::span<const float> Session::run(std::span<const int32_t> tokens, bool all_logits) {
  if (tokens.empty()) throw Error("session: nothing to feed");
  const int64_t start = static_cast<int64_t>(tokens_.size());
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (start + n > context_)
    throw Error("the prompt needs " + std::to_string(start + n) +
                " tokens, more than the context of " + std::to_string(context_) + " (--ctx)");
  logits_.resize(static_cast<size_t>((all_logits ? n : 1) * model_->vocab_size()));
  // longrope: every key is rotated by the factors of the sequence's whole length, so cached keys
  // of the other set are computed again (transformers drops its cache at the switch too).
  const int64_t length = start + n;
  const int64_t rope_switch = model_->rope_switch_length();
  const bool long_rope = rope_switch > 0 && length > rope_switch;
  if (start > 0 && long_rope != long_rope_) {
    const std::vector<int32_t> history = std::move(tokens_);
    tokens_.clear();
    forward(history, 0, length, false);
  }
  long_rope_ = long_rope;
  forward(tokens, start, length, all_logits);
  return logits_;
}

void Session::forward(std::span<const int32_t> tokens, int64_t start, int64_t length,
                      bool all_logits) {
  const int64_t vocab = model_->vocab_size();
  const auto n = static_cast<int64_t>(tokens.size());
  for (int64_t done = 0; done < n; done += chunk_) {
    const int64_t len = std::min(chunk_, n - done);
    SequenceInput seq;
    seq.tokens = tokens.subspan(static_cast<size_t>(done), static_cast<size_t>(len));
    seq.start = start + done;
    seq.length = length;
    seq.block_table = block_table_;
    const bool last_chunk = done + len == n;
    seq.logits = all_logits   ? SequenceInput::Logits::all
                 : last_chunk ? SequenceInput::Logits::last
                              : SequenceInput::Logits::none;
    float* out = logits_.data() + (all_logits ? done * vocab : 0);
    model_->forward(std::span(&seq, 1), cache_, out, pool_);
    tokens_.insert(tokens_.end(), seq.tokens.begin(), seq.tokens.end());
  }
}

}  // namespace dq4
