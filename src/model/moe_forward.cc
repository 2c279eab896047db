// A sparse layer's MLP, as Hugging Face's Qwen2-MoE / Qwen3-MoE / Mixtral / OLMoE / Ernie 4.5 MoE /
// GLM-4 MoE / Granite MoE blocks compute it: each token's top-k experts' SwiGLU outputs, weighted
// by the router, summed in expert order, plus the shared expert (Qwen2-MoE's times sigmoid(its
// gate), the others' as it is):
//
//   [norm | router | scores, top-k]  (the rows grouped by expert: on this thread)
//   [quantize each row once | copy to its experts' rows | experts' gate/up | silu]
//   [quantize | experts' down | per token: x += sum of its experts' weighted outputs]
//   with a shared expert, between the first two: [shared gate/up] [silu | shared down]

#include "moe_forward.h"

#include <algorithm>
#include <cmath>

#include "dq4/kernels/thread_pool.h"
#include "dq4/layers/ops.h"
#include "routing.h"

namespace dq4::model {
namespace {

template <class T>
T* sized(std::vector<T>& v, int64_t count) {
  if (v.size() < static_cast<size_t>(count)) v.resize(static_cast<size_t>(count));
  return v.data();
}

}  // namespace

void moe_mlp(Model::Impl& m, const DecoderLayer& layer, float* x, float* h, int64_t rows,
             FunctionRef<void(int64_t, int64_t)> norm, ThreadPool& pool) {
  const Architecture& a = m.arch;
  Model::Impl::Workspace& ws = m.ws;
  const int64_t hidden = a.config.hidden_size, experts = a.experts, k = a.experts_per_token;
  const int64_t inter = a.expert_intermediate;
  const bool shared = layer.has_mlp();
  const int64_t router_cols = layer.router.out_features();  // experts (+ the shared gate)
  const float* selection_bias =
      layer.selection_bias.empty() ? nullptr : layer.selection_bias.data();

  // The router, then each row's choice.
  float* router = sized(ws.router, rows * router_cols);
  int32_t* choice = sized(ws.choice, rows * k);
  float* choice_weight = sized(ws.choice_weight, rows * k);
  const auto route = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      route_token(router + r * router_cols, experts, k, a.routing, selection_bias, choice + r * k,
                  choice_weight + r * k);
  };
  layer.router.forward(h, rows, hidden, router, router_cols, &pool,
                       {.before = norm, .after = route});

  // The rows grouped by expert, in row order within each expert: the grouped row of each choice.
  const int64_t routed = rows * k;
  int64_t* offsets = sized(ws.offsets, experts + 1);
  int64_t* fill = sized(ws.fill, experts);
  int32_t* source = sized(ws.group_source, routed);
  float* group_weight = sized(ws.group_weight, routed);
  int64_t* row_groups = sized(ws.row_groups, routed);
  std::fill(fill, fill + experts, 0);
  for (int64_t i = 0; i < routed; ++i) ++fill[choice[i]];
  offsets[0] = 0;
  for (int64_t e = 0; e < experts; ++e) {
    offsets[e + 1] = offsets[e] + fill[e];
    fill[e] = offsets[e];
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) {
      const int64_t g = fill[choice[r * k + j]]++;
      source[g] = static_cast<int32_t>(r);
      group_weight[g] = choice_weight[r * k + j];
      row_groups[r * k + j] = g;
    }

  // The shared expert over every row.
  float* shared_out = nullptr;
  if (shared) {
    const int64_t shared_inter = a.shared_expert_intermediate;
    float* gate_up = sized(ws.gate_up, rows * 2 * shared_inter);
    float* act = sized(ws.act, rows * shared_inter);
    shared_out = sized(ws.shared_out, rows * hidden);
    layer.gate_up.forward(h, rows, hidden, gate_up, 2 * shared_inter, &pool);
    const auto silu = [&](int64_t r0, int64_t r1) {
      ops::silu_mul(gate_up + r0 * 2 * shared_inter, r1 - r0, shared_inter, 2 * shared_inter,
                    act + r0 * shared_inter, shared_inter);
    };
    layer.down.forward(act, rows, shared_inter, shared_out, hidden, &pool, {.before = silu});
  }

  // The experts' gate/up over the grouped rows (each row of h quantized once), silu * up.
  float* group_gate_up = sized(ws.group_gate_up, routed * 2 * inter);
  float* group_act = sized(ws.group_act, routed * inter);
  float* group_out = sized(ws.group_out, routed * hidden);
  const std::span<const int64_t> offset_span(offsets, static_cast<size_t>(experts + 1));
  const auto silu = [&](int64_t g0, int64_t g1) {
    ops::silu_mul(group_gate_up + g0 * 2 * inter, g1 - g0, inter, 2 * inter, group_act + g0 * inter,
                  inter);
  };
  layer.experts_in.forward(h, rows, hidden, {offset_span, source}, group_gate_up, 2 * inter, &pool,
                           {.after = silu});

  // The experts' down, then per row: the weighted sum of its experts' outputs in expert order
  // (its grouped rows ascend with the expert), plus the (gated) shared expert, added to x. h's
  // row is the sum's scratch: nothing reads h any more.
  const auto combine = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t* groups = row_groups + r * k;
      std::sort(groups, groups + k);
      float* sum = h + r * hidden;
      std::fill(sum, sum + hidden, 0.0f);
      for (int64_t j = 0; j < k; ++j) {
        const float w = group_weight[groups[j]];
        const float* y = group_out + groups[j] * hidden;
        for (int64_t d = 0; d < hidden; ++d) sum[d] += w * y[d];
      }
      if (shared) {
        const float* y = shared_out + r * hidden;
        if (a.shared_expert_gated) {
          const float logit = router[r * router_cols + experts];
          const float gate = 1.0f / (1.0f + std::exp(-logit));
          for (int64_t d = 0; d < hidden; ++d) sum[d] += gate * y[d];
        } else {
          for (int64_t d = 0; d < hidden; ++d) sum[d] += y[d];
        }
      }
      float* xr = x + r * hidden;
      if (a.residual_multiplier != 1.0f)  // Granite
        for (int64_t d = 0; d < hidden; ++d) sum[d] *= a.residual_multiplier;
      for (int64_t d = 0; d < hidden; ++d) xr[d] += sum[d];
    }
  };
  layer.experts_out.forward(group_act, routed, inter, {offset_span, nullptr}, group_out, hidden,
                            &pool, {.finish = combine, .finish_rows = rows});
}

}  // namespace dq4::model
