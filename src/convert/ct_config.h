#pragma once
// The "quantization_config" of config.json exactly as compressed-tensors writes it
// (shared/docs/checkpoint-format-and-math.md §2.5-2.7).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dq4/convert/quantize.h"

namespace dq4::quant {

// `ignore` is the full list written to the config ("lm_head" and the user's entries).
// nlohmann::json objects keep their keys sorted, as compressed-tensors' sort_keys=True does.
nlohmann::json compressed_tensors_config(const QuantizeOptions& options,
                                         const std::vector<std::string>& ignore);

}  // namespace dq4::quant
