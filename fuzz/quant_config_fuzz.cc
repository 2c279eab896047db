// libFuzzer target: arbitrary bytes as a config.json. Parsing the model config and the
// compressed-tensors quantization_config, then resolving the scheme of every linear module of a
// small Llama, must either succeed or throw dq4::Error; never crash or hang.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "dq4/io/model_config.h"
#include "dq4/io/quant_config.h"
#include "dq4/kernels/error.h"
#include "dq4/model/architecture.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const dq4::QuantizationConfig config = dq4::QuantizationConfig::parse(text, "fuzz-config");
    for (const char* module :
         {"model.layers.0.self_attn.q_proj", "model.layers.1.mlp.down_proj", "lm_head", ""}) {
      try {
        const dq4::LinearScheme scheme = config.resolve(module);
        if (scheme.kind != dq4::LinearKind::dense && scheme.group_size < 0) __builtin_trap();
      } catch (const dq4::Error&) {
      }
    }
  } catch (const dq4::Error&) {
  }
  try {
    const dq4::ModelConfig model = dq4::ModelConfig::parse(text, "fuzz-config");
    const dq4::Architecture arch = dq4::Architecture::from_config(model, "fuzz-config");
    // Bounded so a huge layer count cannot make this input slow.
    if (model.num_hidden_layers < 64) (void)arch.linear_modules();
    if (model.head_dim < 4096) (void)arch.rope_inv_freq();
  } catch (const dq4::Error&) {
  }
  return 0;
}
