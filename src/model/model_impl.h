#pragma once
// What a loaded model holds (Model::Impl), shared by loading (model_load.cc) and the forward pass
// (model_forward.cc).

#include <cstdint>
#include <string>
#include <vector>

#include "dq4/io/tensor_view.h"
#include "dq4/kernels/aligned_buffer.h"
#include "dq4/kernels/attention.h"
#include "dq4/layers/experts.h"
#include "dq4/layers/linear.h"
#include "dq4/model/architecture.h"
#include "dq4/model/model.h"

namespace dq4 {

struct DecoderLayer {
  std::vector<float> input_norm, post_attention_norm;
  // Qwen3, Gemma 3: [head_dim] each; OLMoE: [q features], [kv features]; empty otherwise.
  std::vector<float> q_norm, k_norm;
  // Gemma: the norms of the MLP's input and output; empty otherwise. Gemma's norm weights are
  // held as 1 + w, what its RMSNorm multiplies by.
  std::vector<float> pre_feedforward_norm, post_feedforward_norm;
  Linear qkv, o;
  // The dense MLP, or a sparse layer's shared expert (Qwen2-MoE); empty in other sparse layers.
  Linear gate_up, down;
  // Sparse layers: the router (Qwen2-MoE: the shared-expert gate as its last column) and the
  // experts' fused gate/up and down; empty in dense layers.
  Linear router;
  Experts experts_in, experts_out;
  // Ernie 4.5 MoE: the router's selection bias, [experts]; empty where there is none.
  std::vector<float> selection_bias;
  bool sparse() const { return experts_in.count() > 0; }
  bool has_mlp() const { return gate_up.out_features() > 0; }
};

struct Model::Impl {
  Architecture arch;
  // The embedding table in the checkpoint's dtype, copied out of the file at load like every
  // other weight: nothing read at run time is file-backed, so a model file truncated or
  // replaced under a running model (a re-download) cannot fault it.
  AlignedBuffer embedding;
  Dtype embedding_dtype = Dtype::F32;
  std::vector<DecoderLayer> layers;
  std::vector<float> final_norm;
  Linear head;
  std::vector<float> inv_freq;
  std::vector<float> inv_freq_local;  // Gemma 3's local layers; empty otherwise
  std::vector<float> inv_freq_long;   // longrope's long factors; empty otherwise
  std::vector<int32_t> eos_ids;
  LoadReport report;

  // Activations of the batch being run, reused from call to call.
  struct Workspace {
    std::vector<float> x, h, qkv, attn, gate_up, act, head_in, rope_cos, rope_sin;
    std::vector<float> rope_cos_local, rope_sin_local;  // Gemma 3's and OLMo 3's sliding layers
    std::vector<float> query_scale;                     // Ministral 3: each row's query scale
    std::vector<int32_t> row_sequence;                  // the sequence of each row
    std::vector<int64_t> row_position;                  // the position of each row
    std::vector<int64_t> head_rows;                     // the row of x each row of the head takes
    std::vector<attention::Args> attention;             // one layer's sequences
    // Sparse layers (moe_forward.cc): router outputs and choices per row, the rows grouped by
    // expert, and the experts' and the shared expert's activations.
    std::vector<float> router, choice_weight, group_weight, group_gate_up, group_act, group_out,
        shared_out;
    std::vector<int32_t> choice, group_source;
    std::vector<int64_t> row_groups, offsets, fill;
  } ws;
};

}  // namespace dq4
