// The `dq4 synth` presets: real model shapes, and tiny models of each architecture, one row each.

#include <string>
#include <vector>

#include "dq4/convert/synth.h"
#include "dq4/kernels/error.h"

namespace dq4 {
namespace {

enum class Arch {
  llama,
  mistral,
  qwen2,
  qwen3,
  qwen2_moe,
  qwen3_moe,
  mixtral,
  olmoe,
  gemma2,
  gemma3,
  phi3,
  granite,
  smollm3,
  olmo2,
  olmo3,
  exaone4,
  ministral3,
  ernie4_5,
  ernie4_5_moe,
  glm4,
  glm4_moe,
  granite4,
  granite_moe,
  granite_moe_shared
};
enum class Rope { none, llama3, linear, longrope, yarn };

// A preset: the defaults are the tiny model of synth.h's comment (Llama, untied, no rope scaling).
struct Preset {
  const char* name;
  Arch arch = Arch::llama;
  int64_t hidden = 96, intermediate = 200, layers = 2, heads = 4, kv_heads = 2, head_dim = 24;
  int64_t vocab = 384, context = 256;
  double rms_norm_eps = 1e-5, rope_theta = 10000.0;
  bool tied = false;
  Rope rope = Rope::none;
  double rope_factor = 1.0;
  int64_t rope_original_context = 0;           // llama3, longrope, yarn
  int64_t sliding_window = 0;                  // 0: none
  double attn_softcap = 0, final_softcap = 0;  // Gemma 2
  bool tiny = true;                            // weights ~N(0, 0.1^2), norms 1 + ~N(0, 0.1^2)
  // Mixtures of experts: experts, experts per token, the experts' intermediate size (Qwen's
  // moe_intermediate_size; Mixtral's and OLMoE's is `intermediate`), the shared expert's
  // (Qwen2-MoE) or shared MLP's (GraniteMoeShared).
  int64_t experts = 0, experts_per_token = 0, expert_intermediate = 0, shared_intermediate = 0;
  bool norm_topk_prob = false;
  // Ernie 4.5 MoE, GLM-4 MoE: the shared experts (each of the experts' size) and the first sparse
  // layer; GLM-4 MoE's expert groups and the routing weights' factor.
  int64_t shared_experts = 0, first_sparse_layer = 0;
  int64_t expert_groups = 1, expert_groups_used = 1;
  double routed_scale = 1.0;
  bool rotary = true;  // Granite 4: false = no rotary embeddings (position_embedding_type null)
};

// The tiny mixtures: 8 experts of intermediate 64 (Mixtral 4), 2 per token.
constexpr Preset tiny_moe(const char* name, Arch arch, bool norm_topk_prob) {
  Preset p{.name = name, .arch = arch, .rms_norm_eps = 1e-6};
  p.experts = arch == Arch::mixtral ? 4 : 8;
  p.experts_per_token = 2;
  p.norm_topk_prob = norm_topk_prob;
  if (arch == Arch::qwen2_moe || arch == Arch::qwen3_moe) {
    p.expert_intermediate = 64;
  } else {
    p.intermediate = 64;
  }
  const bool granite =
      arch == Arch::granite_moe || arch == Arch::granite_moe_shared || arch == Arch::granite4;
  if (arch == Arch::qwen2_moe || arch == Arch::granite_moe_shared || arch == Arch::granite4)
    p.shared_intermediate = 96;
  // Granite ties its head, as the tiny dense Granite does: the logits' divisor leaves an untied
  // random head's next tokens too flat to compare.
  if (granite) p.tied = true;
  if (arch == Arch::olmoe) p.kv_heads = p.heads;  // as OLMoE (llama.cpp's k norm is [hidden])
  return p;
}

// Llama 3.x: shapes differ, the rest is shared.
constexpr Preset llama3(const char* name, int64_t hidden, int64_t intermediate, int64_t layers,
                        int64_t heads, int64_t head_dim, bool tied, double rope_factor) {
  return {.name = name,
          .hidden = hidden,
          .intermediate = intermediate,
          .layers = layers,
          .heads = heads,
          .kv_heads = 8,
          .head_dim = head_dim,
          .vocab = 128256,
          .context = 131072,
          .rope_theta = 500000.0,
          .tied = tied,
          .rope = Rope::llama3,
          .rope_factor = rope_factor,
          .rope_original_context = 8192,
          .tiny = false};
}

// Each tiny model differs from "tiny" in one way.
constexpr Preset kPresets[] = {
    llama3("llama-1b", 2048, 8192, 16, 32, 64, true, 32.0),
    llama3("llama-3b", 3072, 8192, 28, 24, 128, true, 32.0),
    llama3("llama-8b", 4096, 14336, 32, 32, 128, false, 8.0),
    {.name = "qwen3-0.6b",
     .arch = Arch::qwen3,
     .hidden = 1024,
     .intermediate = 3072,
     .layers = 28,
     .heads = 16,
     .kv_heads = 8,
     .head_dim = 128,
     .vocab = 151936,
     .context = 40960,
     .rms_norm_eps = 1e-6,
     .rope_theta = 1000000.0,
     .tied = true,
     .tiny = false},
    {.name = "qwen3-30b-a3b",
     .arch = Arch::qwen3_moe,
     .hidden = 2048,
     .intermediate = 6144,
     .layers = 48,
     .heads = 32,
     .kv_heads = 4,
     .head_dim = 128,
     .vocab = 151936,
     .context = 40960,
     .rms_norm_eps = 1e-6,
     .rope_theta = 1000000.0,
     .tiny = false,
     .experts = 128,
     .experts_per_token = 8,
     .expert_intermediate = 768,
     .norm_topk_prob = true},
    {.name = "ernie4_5-21b-a3b",
     .arch = Arch::ernie4_5_moe,
     .hidden = 2560,
     .intermediate = 12288,
     .layers = 28,
     .heads = 20,
     .kv_heads = 4,
     .head_dim = 128,
     .vocab = 103424,
     .context = 131072,
     .rope_theta = 500000.0,
     .tied = true,
     .tiny = false,
     .experts = 64,
     .experts_per_token = 6,
     .expert_intermediate = 1536,
     .shared_experts = 2,
     .first_sparse_layer = 1},
    {.name = "glm4.5-air",
     .arch = Arch::glm4_moe,
     .hidden = 4096,
     .intermediate = 10944,
     .layers = 46,
     .heads = 96,
     .kv_heads = 8,
     .head_dim = 128,
     .vocab = 151552,
     .context = 131072,
     .rope_theta = 1000000.0,
     .tiny = false,
     .experts = 128,
     .experts_per_token = 8,
     .expert_intermediate = 1408,
     .norm_topk_prob = true,
     .shared_experts = 1,
     .first_sparse_layer = 1,
     .routed_scale = 1.0},
    // Granite 3.1 3B-A800M: 40 stacked experts of 512, 8 per token.
    {.name = "granite3.1-3b-a800m",
     .arch = Arch::granite_moe,
     .hidden = 1536,
     .intermediate = 512,
     .layers = 32,
     .heads = 24,
     .kv_heads = 8,
     .head_dim = 64,
     .vocab = 49155,
     .context = 131072,
     .rope_theta = 10000000.0,
     .tied = true,
     .tiny = false,
     .experts = 40,
     .experts_per_token = 8},
    // Granite 4.0 Micro: Granite 4 without mamba layers or experts.
    {.name = "granite4-micro",
     .arch = Arch::granite4,
     .hidden = 2560,
     .intermediate = 8192,
     .layers = 40,
     .heads = 40,
     .kv_heads = 8,
     .head_dim = 64,
     .vocab = 100352,
     .context = 131072,
     .rope_theta = 10000000.0,
     .tied = true,
     .tiny = false},
    {.name = "olmoe-1b-7b",
     .arch = Arch::olmoe,
     .hidden = 2048,
     .intermediate = 1024,
     .layers = 16,
     .heads = 16,
     .kv_heads = 16,
     .head_dim = 128,
     .vocab = 50304,
     .context = 4096,
     .rms_norm_eps = 1e-5,
     .tiny = false,
     .experts = 64,
     .experts_per_token = 8},
    {.name = "mixtral-8x7b",
     .arch = Arch::mixtral,
     .hidden = 4096,
     .intermediate = 14336,
     .layers = 32,
     .heads = 32,
     .kv_heads = 8,
     .head_dim = 128,
     .vocab = 32000,
     .context = 32768,
     .rms_norm_eps = 1e-5,
     .rope_theta = 1000000.0,
     .tiny = false,
     .experts = 8,
     .experts_per_token = 2},
    {.name = "gemma2-2b",
     .arch = Arch::gemma2,
     .hidden = 2304,
     .intermediate = 9216,
     .layers = 26,
     .heads = 8,
     .kv_heads = 4,
     .head_dim = 256,
     .vocab = 256000,
     .context = 8192,
     .rms_norm_eps = 1e-6,
     .tied = true,
     .sliding_window = 4096,
     .attn_softcap = 50.0,
     .final_softcap = 30.0,
     .tiny = false},
    {.name = "gemma3-1b",
     .arch = Arch::gemma3,
     .hidden = 1152,
     .intermediate = 6912,
     .layers = 26,
     .heads = 4,
     .kv_heads = 1,
     .head_dim = 256,
     .vocab = 262144,
     .context = 32768,
     .rms_norm_eps = 1e-6,
     .rope_theta = 1000000.0,
     .tied = true,
     .sliding_window = 512,
     .tiny = false},
    {.name = "tiny"},
    {.name = "tiny-llama3",
     .rope = Rope::llama3,
     .rope_factor = 4.0,
     .rope_original_context = 32},  // all three llama3 frequency bands occur
    {.name = "tiny-linear-rope", .rope = Rope::linear, .rope_factor = 2.0},
    {.name = "tiny-tied", .tied = true},
    {.name = "tiny-mistral", .arch = Arch::mistral, .sliding_window = 16},
    {.name = "tiny-qwen2", .arch = Arch::qwen2, .rms_norm_eps = 1e-6},
    {.name = "tiny-qwen3", .arch = Arch::qwen3, .rms_norm_eps = 1e-6, .tied = true},
    // Qwen2.5's long-context setting: yarn over the original context (frequency indices 0-2
    // extrapolated, 3-6 on the ramp, 7-11 interpolated), the context extended to 4x.
    {.name = "tiny-qwen2-yarn",
     .arch = Arch::qwen2,
     .context = 1024,
     .rms_norm_eps = 1e-6,
     .rope = Rope::yarn,
     .rope_factor = 4.0,
     .rope_original_context = 1024},
    tiny_moe("tiny-qwen3-moe", Arch::qwen3_moe, true),
    tiny_moe("tiny-qwen2-moe", Arch::qwen2_moe, false),
    tiny_moe("tiny-mixtral", Arch::mixtral, true),
    tiny_moe("tiny-olmoe", Arch::olmoe, false),
    // Gemma 2: local layers (window 8) alternate with global ones, scores and logits soft-capped
    // near their size (the real caps, 50 and 30, would hardly bend a tiny model's).
    {.name = "tiny-gemma2",
     .arch = Arch::gemma2,
     .rms_norm_eps = 1e-6,
     .tied = true,
     .sliding_window = 8,
     .attn_softcap = 2.0,
     .final_softcap = 4.0},
    // Gemma 3: six layers so that the pattern's global layer occurs, linear rope scaling on it.
    {.name = "tiny-gemma3",
     .arch = Arch::gemma3,
     .layers = 6,
     .rms_norm_eps = 1e-6,
     .rope_theta = 1000000.0,
     .tied = true,
     .rope = Rope::linear,
     .rope_factor = 8.0,
     .sliding_window = 8},
    // Granite: Llama with its four scalars (Granite 3's own values) and tied embeddings.
    {.name = "tiny-granite", .arch = Arch::granite, .tied = true},
    // Granite 4 (GraniteMoeHybrid, attention layers only, no experts): Granite's scalars, the
    // MLP's gate and up fused; with rotary embeddings, and without them (NoPE).
    {.name = "tiny-granite4", .arch = Arch::granite4, .tied = true},
    // Granite's mixtures: experts stacked in one tensor per block ([experts, 2 x 64, hidden] gate
    // and up, [experts, hidden, 64] down), with and without a shared MLP.
    tiny_moe("tiny-granitemoe", Arch::granite_moe, false),
    tiny_moe("tiny-granitemoe-shared", Arch::granite_moe_shared, false),
    // Granite 4 (attention layers only) with experts beside its shared MLP.
    tiny_moe("tiny-granite4-moe", Arch::granite4, false),
    {.name = "tiny-granite4-nope", .arch = Arch::granite4, .tied = true, .rotary = false},
    // SmolLM3: every fourth layer without rotary embeddings (NoPE), so four layers.
    {.name = "tiny-smollm3", .arch = Arch::smollm3, .layers = 4, .tied = true},
    // OLMo 2: norms after each sublayer instead of before, q/k norms over the whole projections.
    {.name = "tiny-olmo2", .arch = Arch::olmo2, .rms_norm_eps = 1e-6},
    // OLMo 3: OLMo 2 with windows (8) on three layers of four, yarn on the fourth only (frequency
    // indices 1-3 on the ramp, 4-11 interpolated), the context extended to 4x.
    {.name = "tiny-olmo3",
     .arch = Arch::olmo3,
     .layers = 4,
     .rms_norm_eps = 1e-6,
     .rope = Rope::yarn,
     .rope_factor = 4.0,
     .rope_original_context = 64,
     .sliding_window = 8},
    // EXAONE 4 (32B's pattern): windows (8) on three layers of four whose global layers are NoPE,
    // norms after each sublayer, per-head q/k norms, llama3 rope on the others; 64 layers, the
    // only count llama.cpp's exaone4 runs windows for.
    {.name = "tiny-exaone4",
     .arch = Arch::exaone4,
     .hidden = 64,
     .intermediate = 128,
     .layers = 64,
     .head_dim = 16,
     .rms_norm_eps = 1e-5,
     .rope = Rope::llama3,
     .rope_factor = 4.0,
     .rope_original_context = 32,
     .sliding_window = 8},
    // Ministral 3: Mistral with yarn (frequency index 0 extrapolated, 1 half, 2-11 interpolated;
    // attention factor 1 from mscale / mscale_all_dim) and queries scaled up past each multiple of
    // the original context of 16 tokens.
    {.name = "tiny-ministral3",
     .arch = Arch::ministral3,
     .rope = Rope::yarn,
     .rope_factor = 16.0,
     .rope_original_context = 16},
    // Ernie 4.5 (0.3B's form): Llama with interleaved rope pairs and tied embeddings.
    {.name = "tiny-ernie4_5", .arch = Arch::ernie4_5, .tied = true},
    // Ernie 4.5 MoE (21B-A3B's form): a dense first layer, then 8 experts (2 per token) chosen by
    // probability plus a selection bias, two shared experts added ungated, interleaved rope pairs.
    {.name = "tiny-ernie4_5-moe",
     .arch = Arch::ernie4_5_moe,
     .layers = 3,
     .tied = true,
     .experts = 8,
     .experts_per_token = 2,
     .expert_intermediate = 64,
     .shared_experts = 2,
     .first_sparse_layer = 1},
    // GLM-4 MoE (GLM-4.5's form): a dense first layer, then 8 experts scored by sigmoid, 2 per
    // token from the better of 2 groups by score plus selection bias, renormalized and scaled
    // by 2.5, a shared expert; q/k/v biases, per-head q/k norms, half of each head rotated
    // (rotate-half).
    {.name = "tiny-glm4-moe",
     .arch = Arch::glm4_moe,
     .layers = 3,
     .experts = 8,
     .experts_per_token = 2,
     .expert_intermediate = 64,
     .norm_topk_prob = true,
     .shared_experts = 1,
     .first_sparse_layer = 1,
     .expert_groups = 2,
     .expert_groups_used = 1,
     .routed_scale = 2.5},
    // GLM-4 (0414): norms before and after each sublayer, half of each head rotated in interleaved
    // pairs, q/k/v biases, fused gate_up_proj.
    {.name = "tiny-glm4", .arch = Arch::glm4},
    // Phi-3: fused qkv and gate_up, partial rotary (3/4), longrope (original context 256: what
    // llama.cpp pads a small context to, so that its choice of factors can be matched).
    {.name = "tiny-phi3",
     .arch = Arch::phi3,
     .rope = Rope::longrope,
     .rope_factor = 4.0,
     .rope_original_context = 256},
};

SynthOptions options_of(const Preset& p) {
  SynthOptions o;
  if (p.tiny) {
    o.weight_std = 0.1f;
    o.norm_spread = 0.1f;
  }
  o.dtype = Dtype::BF16;
  ModelConfig& c = o.config;
  switch (p.arch) {
    case Arch::llama:
      c.architecture = "LlamaForCausalLM", c.model_type = "llama";
      break;
    case Arch::mistral:
      c.architecture = "MistralForCausalLM", c.model_type = "mistral";
      break;
    case Arch::qwen2:  // q/k/v biases
      c.architecture = "Qwen2ForCausalLM", c.model_type = "qwen2";
      c.attention_bias = true;
      break;
    case Arch::qwen3:  // q/k norms
      c.architecture = "Qwen3ForCausalLM", c.model_type = "qwen3";
      break;
    case Arch::qwen2_moe:  // q/k/v biases, a shared expert
      c.architecture = "Qwen2MoeForCausalLM", c.model_type = "qwen2_moe";
      c.attention_bias = true;
      break;
    case Arch::qwen3_moe:  // q/k norms
      c.architecture = "Qwen3MoeForCausalLM", c.model_type = "qwen3_moe";
      break;
    case Arch::mixtral:
      c.architecture = "MixtralForCausalLM", c.model_type = "mixtral";
      break;
    case Arch::olmoe:  // q/k norms over the whole projections
      c.architecture = "OlmoeForCausalLM", c.model_type = "olmoe";
      break;
    case Arch::gemma2:  // soft-caps
      c.architecture = "Gemma2ForCausalLM", c.model_type = "gemma2";
      c.hidden_act = "gelu_pytorch_tanh";
      c.attn_logit_softcapping = p.attn_softcap;
      c.final_logit_softcapping = p.final_softcap;
      c.query_pre_attn_scalar = static_cast<double>(p.head_dim);
      break;
    case Arch::gemma3:  // q/k norms, local layers' own rope base
      c.architecture = "Gemma3ForCausalLM", c.model_type = "gemma3_text";
      c.hidden_act = "gelu_pytorch_tanh";
      c.query_pre_attn_scalar = static_cast<double>(p.head_dim);
      c.rope_local_base_freq = 10000.0;
      c.sliding_window_pattern = 6;
      break;
    case Arch::phi3:
      c.architecture = "Phi3ForCausalLM", c.model_type = "phi3";
      c.partial_rotary_factor = 0.75;
      break;
    case Arch::olmo2:
      c.architecture = "Olmo2ForCausalLM", c.model_type = "olmo2";
      break;
    case Arch::olmo3:  // all but every fourth layer windowed
      c.architecture = "Olmo3ForCausalLM", c.model_type = "olmo3";
      c.sliding_window_layout = "LLLG";
      break;
    case Arch::ministral3:
      c.architecture = "Ministral3ForCausalLM", c.model_type = "ministral3";
      c.rope_scaling.mscale = c.rope_scaling.mscale_all_dim = 1.0;
      c.rope_scaling.llama_4_scaling_beta = 0.1;
      break;
    case Arch::glm4:
      c.architecture = "Glm4ForCausalLM", c.model_type = "glm4";
      c.attention_bias = true;
      c.partial_rotary_factor = 0.5;
      break;
    case Arch::glm4_moe:
      c.architecture = "Glm4MoeForCausalLM", c.model_type = "glm4_moe";
      c.attention_bias = true;
      c.partial_rotary_factor = 0.5;
      c.use_qk_norm = p.tiny;  // GLM-4.5's, not GLM-4.5-Air's
      c.moe_num_shared_experts = p.shared_experts;
      c.first_sparse_layer = p.first_sparse_layer;
      c.expert_groups = p.expert_groups;
      c.expert_groups_used = p.expert_groups_used;
      c.routed_scaling_factor = p.routed_scale;
      break;
    case Arch::ernie4_5:
      c.architecture = "Ernie4_5ForCausalLM", c.model_type = "ernie4_5";
      break;
    case Arch::ernie4_5_moe:
      c.architecture = "Ernie4_5_MoeForCausalLM", c.model_type = "ernie4_5_moe";
      c.moe_num_shared_experts = p.shared_experts;
      c.first_sparse_layer = p.first_sparse_layer;
      c.moe_norm_min = 1e-12;
      c.moe_use_aux_free = true;
      break;
    case Arch::exaone4:
      c.architecture = "Exaone4ForCausalLM", c.model_type = "exaone4";
      c.sliding_window_layout = "LLLG";
      break;
    case Arch::smollm3:
      c.architecture = "SmolLM3ForCausalLM", c.model_type = "smollm3";
      for (int64_t i = 0; i < p.layers; ++i) c.no_rope_layers.push_back((i + 1) % 4 != 0);
      c.no_rope_layer_interval = 4;
      break;
    case Arch::granite:
    case Arch::granite4:
    case Arch::granite_moe:
    case Arch::granite_moe_shared:
      c.architecture = p.arch == Arch::granite       ? "GraniteForCausalLM"
                       : p.arch == Arch::granite4    ? "GraniteMoeHybridForCausalLM"
                       : p.arch == Arch::granite_moe ? "GraniteMoeForCausalLM"
                                                     : "GraniteMoeSharedForCausalLM";
      c.model_type = p.arch == Arch::granite       ? "granite"
                     : p.arch == Arch::granite4    ? "granitemoehybrid"
                     : p.arch == Arch::granite_moe ? "granitemoe"
                                                   : "granitemoeshared";
      c.shared_intermediate_size = p.shared_intermediate;
      if (p.arch == Arch::granite4) {
        // Without experts, the shared_mlp is the MLP.
        if (p.experts == 0) c.shared_intermediate_size = p.intermediate;
        if (p.rotary) c.position_embedding_type = "rope";
      }
      c.embedding_multiplier = 12.0;
      c.attention_multiplier = 0.015625;
      c.residual_multiplier = 0.22;
      c.logits_scaling = 8.0;
      break;
  }
  c.num_experts = p.experts;
  c.num_experts_per_tok = p.experts_per_token;
  c.moe_intermediate_size = p.expert_intermediate;
  if (p.arch == Arch::qwen2_moe) c.shared_expert_intermediate_size = p.shared_intermediate;
  c.norm_topk_prob = p.norm_topk_prob;
  c.hidden_size = p.hidden;
  c.intermediate_size = p.intermediate;
  c.num_hidden_layers = p.layers;
  c.num_attention_heads = p.heads;
  c.num_key_value_heads = p.kv_heads;
  c.head_dim = p.head_dim;
  c.vocab_size = p.vocab;
  c.max_position_embeddings = p.context;
  c.rms_norm_eps = p.rms_norm_eps;
  c.rope_theta = p.rope_theta;
  c.tie_word_embeddings = p.tied;
  c.sliding_window = p.sliding_window;
  if (p.rope != Rope::none) {
    c.rope_scaling.type = p.rope == Rope::llama3   ? "llama3"
                          : p.rope == Rope::linear ? "linear"
                          : p.rope == Rope::yarn   ? "yarn"
                                                   : "longrope";
    // longrope's factor is implied by the contexts (Phi-3's configs carry none).
    if (p.rope != Rope::longrope) {
      c.rope_scaling.factor = p.rope_factor;
      c.rope_scaling.factor_given = true;
    }
  }
  if (p.rope == Rope::longrope) {
    // max_position_embeddings is factor times the original context; the factors grow with the
    // wavelength as Phi-3's do (short near 1, long up to the factor).
    c.original_max_position_embeddings = p.rope_original_context;
    c.max_position_embeddings = static_cast<int64_t>(p.rope_factor) * p.rope_original_context;
    const int64_t half = static_cast<int64_t>(static_cast<double>(p.head_dim) * 0.75) / 2;
    for (int64_t i = 0; i < half; ++i) {
      const double t = static_cast<double>(i) / static_cast<double>(half - 1);
      c.rope_scaling.short_factor.push_back(1.0 + 0.05 * t);
      c.rope_scaling.long_factor.push_back(1.0 + (p.rope_factor - 1.0) * t);
    }
  }
  if (p.rope == Rope::yarn)
    c.rope_scaling.original_max_position_embeddings = p.rope_original_context;
  if (p.rope == Rope::llama3) {
    c.rope_scaling.low_freq_factor = 1.0;
    c.rope_scaling.high_freq_factor = 4.0;
    c.rope_scaling.original_max_position_embeddings = p.rope_original_context;
  }
  c.torch_dtype = "bfloat16";
  return o;
}

}  // namespace

const std::vector<std::string>& synth_preset_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Preset& p : kPresets) out.emplace_back(p.name);
    return out;
  }();
  return names;
}

SynthOptions synth_preset(std::string_view name) {
  for (const Preset& p : kPresets)
    if (name == p.name) return options_of(p);
  std::string list;
  for (const std::string& n : synth_preset_names()) list += (list.empty() ? "" : ", ") + n;
  throw Error("synth: unknown preset '" + std::string(name) + "' (presets: " + list + ")");
}

}  // namespace dq4
