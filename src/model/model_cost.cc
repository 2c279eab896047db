// Model::cost_per_token: the weights, operations and KV bytes of one token, from what was loaded.

#include "dq4/model/kv_cache.h"
#include "model_impl.h"

namespace dq4 {

TokenCost Model::cost_per_token(attention::KvType kv_type) const {
  const Impl& m = *impl_;
  TokenCost cost;
  const auto add_linear = [&cost](const Linear& linear) {
    cost.weight_bytes += linear.bytes();
    cost.linear_ops += 2 * linear.in_features() * linear.out_features();
  };
  const auto add_vector = [&cost](const std::vector<float>& v) {
    cost.weight_bytes += v.size() * sizeof(float);
  };
  // A token reads the experts it is routed to: experts_per_token of each sparse layer's experts
  // (their average size, which is every expert's unless their kinds differ).
  const auto add_experts = [&](const Experts& experts) {
    const int64_t k = m.arch.experts_per_token;
    cost.weight_bytes +=
        experts.bytes() * static_cast<size_t>(k) / static_cast<size_t>(experts.count());
    cost.linear_ops += 2 * k * experts.in_features() * experts.out_features();
  };
  for (const DecoderLayer& l : m.layers) {
    for (const Linear* linear : {&l.qkv, &l.o}) add_linear(*linear);
    if (l.has_mlp()) {
      add_linear(l.gate_up);
      add_linear(l.down);
    }
    if (l.sparse()) {
      add_linear(l.router);
      add_experts(l.experts_in);
      add_experts(l.experts_out);
    }
    for (const std::vector<float>* norm :
         {&l.input_norm, &l.post_attention_norm, &l.q_norm, &l.k_norm, &l.pre_feedforward_norm,
          &l.post_feedforward_norm, &l.selection_bias})
      add_vector(*norm);
  }
  add_linear(m.head);
  cost.head_ops = 2 * m.head.in_features() * m.head.out_features();
  add_vector(m.final_norm);
  add_vector(m.inv_freq);
  add_vector(m.inv_freq_local);
  add_vector(m.inv_freq_long);
  cost.weight_bytes +=
      static_cast<size_t>(m.arch.config.hidden_size) * dtype_size(m.embedding_dtype);
  // One block of one token holds exactly one position's keys and values, every layer's.
  cost.kv_bytes = KvCache::bytes_per_block(kv_shape(1, 1, kv_type));
  return cost;
}

}  // namespace dq4
