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
  for (const DecoderLayer& l : m.layers) {
    for (const Linear* linear : {&l.qkv, &l.o, &l.gate_up, &l.down}) add_linear(*linear);
    for (const std::vector<float>* norm :
         {&l.input_norm, &l.post_attention_norm, &l.q_norm, &l.k_norm, &l.pre_feedforward_norm,
          &l.post_feedforward_norm})
      add_vector(*norm);
  }
  add_linear(m.head);
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
