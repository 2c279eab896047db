// The engine over dq4::Model (its own file: tests with a fake model need not link the model).
#include "dq4/engine/engine.h"

namespace dq4 {

namespace {

class ModelAdapter final : public EngineModel {
 public:
  ModelAdapter(Model& model, ThreadPool* pool) : model_(model), pool_(pool) {}
  int64_t vocab_size() const override { return model_.vocab_size(); }
  int64_t max_context() const override { return model_.max_context(); }
  int64_t rope_switch_length() const override { return model_.rope_switch_length(); }
  const std::vector<TokenId>& eos_ids() const override { return model_.eos_ids(); }
  KvCacheShape kv_shape(int64_t blocks, int64_t block_size, attention::KvType type) const override {
    return model_.kv_shape(blocks, block_size, type);
  }
  void forward(std::span<const SequenceInput> batch, KvCache& cache, float* logits) override {
    model_.forward(batch, cache, logits, pool_);
  }
  ThreadPool* pool() const override { return pool_; }

 private:
  Model& model_;
  ThreadPool* pool_;
};

}  // namespace

Engine::Engine(Model& model, const Tokenizer& tokenizer, const EngineOptions& options,
               ThreadPool* pool)
    : Engine(std::make_unique<ModelAdapter>(model, pool), tokenizer, options) {}

}  // namespace dq4
