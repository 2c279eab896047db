#pragma once
// The options every command that loads a model shares: how its linear layers run.

#include "args.h"
#include "dq4/linear.h"

namespace dq4::cli {

// --activations auto|int8 and --quantize-dense none|w4a8-channel|w4a8-g<G>.
void declare_load_options(Args& args);
// Throws dq4::Error naming the option for a value it does not know.
LinearOptions linear_options(const Args& args);

}  // namespace dq4::cli
