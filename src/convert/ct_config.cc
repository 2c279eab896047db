#include "ct_config.h"

namespace dq4::quant {

// The compressed-tensors release whose serialisation this follows: 0.12.x is the last one
// without the "scale_dtype"/"zp_dtype" keys and with the plain "minmax" observer; newer
// readers (vLLM, transformers) accept both.
constexpr const char* kCompressedTensorsVersion = "0.12.2";

nlohmann::json compressed_tensors_config(const QuantizeOptions& options,
                                         const std::vector<std::string>& ignore) {
  using nlohmann::json;
  const std::string format(weight_format_name(options.format));
  const bool channelwise = options.group_size == 0;
  json weights = {
      {"actorder", nullptr},
      {"block_structure", nullptr},
      {"dynamic", false},
      {"group_size", channelwise ? json(nullptr) : json(options.group_size)},
      {"num_bits", 4},
      {"observer", "minmax"},
      {"observer_kwargs", json::object()},
      {"strategy", channelwise ? "channel" : "group"},
      {"symmetric", true},
      {"type", "int"},
  };
  // Asymmetric: dq4 and KleidiAI quantize activations per token with a zero point, whatever the
  // config says; vLLM's channelwise W4A8 example declares the same.
  json activations = nullptr;
  if (options.quantize_activations)
    activations = {
        {"actorder", nullptr},
        {"block_structure", nullptr},
        {"dynamic", true},
        {"group_size", nullptr},
        {"num_bits", 8},
        {"observer", nullptr},
        {"observer_kwargs", json::object()},
        {"strategy", "token"},
        {"symmetric", false},
        {"type", "int"},
    };
  json group = {
      {"format", format},
      {"input_activations", activations},
      {"output_activations", nullptr},
      {"targets", json::array({"Linear"})},
      {"weights", weights},
  };
  return {
      {"config_groups", {{"group_0", group}}},
      {"format", format},
      {"global_compression_ratio", nullptr},
      {"ignore", ignore},
      {"kv_cache_scheme", nullptr},
      {"quant_method", "compressed-tensors"},
      {"quantization_status", "compressed"},
      {"sparsity_config", json::object()},
      {"transform_config", json::object()},
      {"version", kCompressedTensorsVersion},
  };
}

}  // namespace dq4::quant
