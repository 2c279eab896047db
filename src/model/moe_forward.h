#pragma once
// The MLP of a sparse (mixture-of-experts) decoder layer, for Model::forward.

#include <cstdint>

#include "dq4/kernels/function_ref.h"
#include "model_impl.h"

namespace dq4::model {

// x[rows, hidden] += the layer's mixture of experts (and shared expert) of h, which `norm` makes
// from x (rows of the given range) in the first job.
void moe_mlp(Model::Impl& m, const DecoderLayer& layer, float* x, float* h, int64_t rows,
             FunctionRef<void(int64_t, int64_t)> norm, ThreadPool& pool);

}  // namespace dq4::model
