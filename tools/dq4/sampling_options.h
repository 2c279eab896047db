#pragma once
// The sampling and stopping options of `dq4 generate` and `dq4 chat`.

#include "args.h"
#include "dq4/engine/sampler.h"
#include "dq4/engine/session.h"

namespace dq4::cli {

void declare_sampling_options(Args& args);
SamplingParams sampling_params(const Args& args);
// -n, --stop (repeatable), --ignore-eos, with the model's eos ids.
StopConditions stop_conditions(const Args& args, const Model& model);

}  // namespace dq4::cli
