#pragma once
// Test helpers for the W4A16 kernel family. The cases and their data are the W4A8 family's
// (w4a8_test_support.h): the same weight sources run through either family.

#include <cstdint>
#include <vector>

#include "dq4/kernels/thread_pool.h"
#include "dq4/kernels/w4a16.h"
#include "w4a8_test_support.h"

namespace dq4::test {

// Runs W4A16 pack + matmul with `kernel` on `pool`; returns y [m, ldy] (padding: sentinel -777),
// or with `onto` ([m, ldy]) the matmul accumulated into a copy of it (MatmulArgs::accumulate).
std::vector<float> run_w4a16(const W4A8Case& c, const W4A8Data& d, const w4a16::Kernel& kernel,
                             ThreadPool& pool, const std::vector<float>* onto = nullptr);
// matmul() of `packed` (either family's) on the case's activations.
template <class Packed>
std::vector<float> run_w4a16_on(const Packed& packed, const W4A8Case& c, const W4A8Data& d,
                                ThreadPool& pool, const std::vector<float>* onto = nullptr);

// The W4A16 kernels of this build that this CPU can run.
std::vector<const w4a16::Kernel*> runnable_w4a16_kernels();

// The scale of row n, group g exactly as the checkpoint holds it, widened to f32 (W4A16 uses it
// unrounded; W4A8 rounds group scales to bf16).
float source_scale(const W4A8Case& c, const W4A8Data& d, int64_t n, int64_t g);

}  // namespace dq4::test
