#include "draft_model.h"

#include <algorithm>

#include "dq4/kernels/error.h"
#include "dq4/kernels/thread_pool.h"

namespace dq4::engine {

DraftKv::~DraftKv() { release(); }

void DraftKv::release() {
  if (!blocks_.blocks.empty()) owner_->blocks_.free(blocks_);
  blocks_.hashes.clear();
  computed_ = 0;
  long_rope_ = false;
  written_.clear();
}

DraftModel::DraftModel(Model& model, int64_t target_vocab, int64_t blocks, int64_t block_size,
                       attention::KvType kv_type, bool prefix_caching, int64_t chunk,
                       ThreadPool* pool)
    : model_(model),
      pool_(pool),
      vocab_(std::min(target_vocab, model.vocab_size())),
      chunk_(chunk),
      cache_(model.kv_shape(blocks, block_size, kv_type)),
      blocks_(blocks, block_size, prefix_caching) {
  if (chunk <= 0) throw Error("draft model: chunk must be positive");
}

bool DraftModel::prepare(DraftJob& job) {
  DraftKv& kv = *job.kv;
  const auto len = static_cast<int64_t>(job.tokens.size());
  // Positions up to len + drafts - 2 are written (the last draft is proposed, never run).
  int64_t drafts =
      std::min<int64_t>(static_cast<int64_t>(job.out.size()), model_.max_context() - len + 1);
  // longrope, as the target runs it: the factors of the sequence's length, the cache computed
  // again when it crosses the switch, and no draft run past the switch before the sequence is.
  const int64_t rope_switch = model_.rope_switch_length();
  const bool long_rope = rope_switch > 0 && len > rope_switch;
  if (long_rope != kv.long_rope_) kv.release();
  kv.long_rope_ = long_rope;
  if (rope_switch > 0 && !long_rope) drafts = std::min(drafts, rope_switch - len + 1);
  if (len == 0 || drafts <= 0) return false;
  job.out = job.out.first(static_cast<size_t>(drafts));
  int64_t keep = std::min(kv.computed_, len);
  for (size_t i = 0; i < kv.written_.size() && keep < len && kv.written_[i] == job.tokens[keep];
       ++i)
    ++keep;
  // The last token runs again whatever the cache holds: its row gives the first draft.
  keep = std::min(keep, len - 1);
  if (kv.blocks_.blocks.empty()) {
    const PrefixHit hit = blocks_.find_prefix(job.tokens, kv.long_rope_);
    if (!blocks_.allocate(kv.blocks_, len + drafts - 1, hit)) return false;
    keep = static_cast<int64_t>(hit.blocks.size()) * blocks_.block_size();
  } else if (!blocks_.allocate(kv.blocks_, len + drafts - 1)) {
    return false;
  }
  kv.computed_ = keep;
  kv.written_.clear();
  job.start = keep;
  return true;
}

void DraftModel::forward() {
  const int64_t width = model_.vocab_size();
  logits_.resize(rows_.size() * static_cast<size_t>(width));
  model_.forward(batch_, cache_, logits_.data(), pool_);
  picks_.resize(rows_.size());
  for (size_t i = 0; i < rows_.size(); ++i) {
    float* row = logits_.data() + static_cast<int64_t>(i) * width;
    DraftJob& job = *rows_[i];
    if (job.sampler == nullptr) {
      picks_[i] = static_cast<TokenId>(std::max_element(row, row + vocab_) - row);
      continue;
    }
    // The row's draft follows the job's generated tokens and its drafts so far.
    std::vector<TokenId>& generated = job.kv->generated_;
    const auto prompt = job.tokens.first(static_cast<size_t>(job.prompt_len));
    generated.assign(job.tokens.begin() + job.prompt_len, job.tokens.end());
    generated.insert(generated.end(), job.out.begin(), job.out.begin() + job.count);
    picks_[i] = job.sampler->sample(std::span(row, static_cast<size_t>(vocab_)), prompt, generated);
  }
}

void DraftModel::propose(std::span<DraftJob> jobs) {
  int64_t steps = 0;
  for (DraftJob& job : jobs) {
    job.count = 0;
    if (job.out.empty() || !prepare(job)) {
      job.out = {};
      continue;
    }
    steps = std::max<int64_t>(steps, static_cast<int64_t>(job.out.size()));
  }
  try {
    // Catching up: each sequence's missing tokens, in forwards of `chunk_` tokens at most; the row
    // of its last token gives its first draft.
    for (;;) {
      batch_.clear();
      rows_.clear();
      int64_t budget = chunk_;
      for (DraftJob& job : jobs) {
        const auto len = static_cast<int64_t>(job.tokens.size());
        if (job.out.empty() || job.start == len) continue;
        if (budget == 0) break;
        const int64_t n = std::min(len - job.start, budget);
        const bool last = job.start + n == len;
        batch_.push_back(
            {job.tokens.subspan(static_cast<size_t>(job.start), static_cast<size_t>(n)), job.start,
             job.kv->blocks_.blocks,
             last ? SequenceInput::Logits::last : SequenceInput::Logits::none, len});
        if (last) rows_.push_back(&job);
        job.start += n;
        budget -= n;
      }
      if (batch_.empty()) break;
      forward();
      for (size_t i = 0; i < rows_.size(); ++i) {
        rows_[i]->out[0] = picks_[i];
        rows_[i]->count = 1;
      }
    }
    // Then draft after draft: each job's latest draft runs, its row proposes the next.
    for (int64_t d = 1; d < steps; ++d) {
      batch_.clear();
      rows_.clear();
      for (DraftJob& job : jobs) {
        if (job.count != d || static_cast<int64_t>(job.out.size()) <= d) continue;
        const auto len = static_cast<int64_t>(job.tokens.size());
        batch_.push_back({job.out.subspan(static_cast<size_t>(d - 1), 1), len + d - 1,
                          job.kv->blocks_.blocks, SequenceInput::Logits::last, len});
        rows_.push_back(&job);
      }
      if (batch_.empty()) break;
      forward();
      for (size_t i = 0; i < rows_.size(); ++i) rows_[i]->out[static_cast<size_t>(d)] = picks_[i];
      for (DraftJob* job : rows_) ++job->count;
    }
  } catch (const std::exception&) {
    // Drafts are optional: a draft model that fails leaves its sequences to plain decoding.
    for (DraftJob& job : jobs) {
      job.count = 0;
      job.kv->release();
    }
    return;
  }
  for (DraftJob& job : jobs) {
    if (job.count == 0) continue;
    DraftKv& kv = *job.kv;
    kv.computed_ = static_cast<int64_t>(job.tokens.size());
    kv.written_.assign(job.out.begin(), job.out.begin() + (job.count - 1));
    blocks_.cache_full_blocks(kv.blocks_, job.tokens, kv.computed_, kv.long_rope_);
  }
}

std::unique_ptr<DraftModel> make_engine_draft(const SpeculativeConfig& config, int64_t target_vocab,
                                              const EngineOptions& options, ThreadPool* pool) {
  if (config.method != SpeculativeConfig::Method::draft_model) return nullptr;
  if (!config.draft)
    throw Error("engine: the draft model " + config.model + " is not loaded (load_draft_model)");
  auto draft = std::make_unique<DraftModel>(
      *config.draft, target_vocab, options.kv_blocks, options.block_size, options.kv_type,
      options.enable_prefix_caching, options.max_num_batched_tokens, pool);
  if (options.prefault_kv_cache) draft->prefault(pool != nullptr ? *pool : ThreadPool::global());
  return draft;
}

}  // namespace dq4::engine

namespace dq4 {

namespace {

// One sequence's drafts from a pool of its own, sized for the sequence.
class DraftModelProposer : public Proposer {
 public:
  static constexpr int64_t kBlockSize = 16;
  static constexpr int64_t kChunk = 512;
  DraftModelProposer(Model& model, int64_t target_vocab, int64_t max_len, ThreadPool* pool)
      : draft_(model, target_vocab, (max_len + 2 * kBlockSize - 1) / kBlockSize, kBlockSize,
               attention::KvType::f32, false, kChunk, pool),
        kv_(draft_) {}

  int64_t propose(std::span<const TokenId> tokens, std::span<TokenId> out) override {
    engine::DraftJob job{tokens, &kv_, out};
    draft_.propose(std::span(&job, 1));
    return job.count;
  }

 private:
  engine::DraftModel draft_;
  engine::DraftKv kv_;
};

}  // namespace

std::unique_ptr<Proposer> make_draft_model_proposer(Model& draft, int64_t target_vocab,
                                                    int64_t max_len, ThreadPool* pool) {
  return std::make_unique<DraftModelProposer>(draft, target_vocab, max_len, pool);
}

}  // namespace dq4
