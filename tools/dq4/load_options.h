#pragma once
// The options every command that loads a model shares: how its linear layers run.

#include <cstdint>
#include <optional>
#include <string>

#include "args.h"
#include "dq4/layers/linear.h"

namespace dq4::cli {

// --activations auto|int8 and --quantize-dense none|w4a8-channel|w4a8-g<G>.
void declare_load_options(Args& args);
// Throws dq4::Error naming the option for a value it does not know.
LinearOptions linear_options(const Args& args);

// G of "w4a8-g<G>" when G is a positive multiple of 32, else nullopt (also for other text).
std::optional<int64_t> w4a8_group(const std::string& mode);

}  // namespace dq4::cli
