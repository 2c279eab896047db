#include "load_options.h"

#include "dq4/kernels/error.h"

namespace dq4::cli {

std::optional<int64_t> w4a8_group(const std::string& mode) {
  if (!mode.starts_with("w4a8-g")) return std::nullopt;
  const std::string digits = mode.substr(6);
  const bool numeric = !digits.empty() && digits.size() < 7 &&
                       digits.find_first_not_of("0123456789") == std::string::npos;
  const int64_t group = numeric ? std::stoll(digits) : 0;
  if (group <= 0 || group % 32 != 0) return std::nullopt;
  return group;
}

void declare_load_options(Args& args) {
  args.option("activations", "auto|int8",
              "auto: run each layer as its checkpoint says; int8: also run W4A16 layers on the "
              "W4A8 kernels (activations quantized to int8 per token: faster, less exact)",
              "auto");
  args.option("quantize-dense", "MODE",
              "none, w4a8-channel or w4a8-g<G> (G a multiple of 32): quantize unquantized layers "
              "(e.g. lm_head) at load to int4 weights x int8 activations",
              "none");
}

LinearOptions linear_options(const Args& args) {
  LinearOptions options;
  const std::string activations = args.value("activations");
  if (activations == "int8")
    options.w4a16_as_w4a8 = true;
  else if (activations != "auto")
    throw Error("option --activations: expected auto or int8, got '" + activations + "'");

  const std::string dense = args.value("quantize-dense");
  if (dense == "w4a8-channel") {
    options.quantize_dense_group = 0;
  } else if (dense.starts_with("w4a8-g")) {
    options.quantize_dense_group = w4a8_group(dense);
    if (!options.quantize_dense_group)
      throw Error("option --quantize-dense: group size in '" + dense +
                  "' must be a positive multiple of 32");
  } else if (dense != "none") {
    throw Error("option --quantize-dense: expected none, w4a8-channel or w4a8-g<G>, got '" + dense +
                "'");
  }
  return options;
}

}  // namespace dq4::cli
