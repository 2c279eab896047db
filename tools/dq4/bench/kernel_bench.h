#pragma once

namespace dq4::cli::bench {

// dq4 bench kernels [options]: speed of the W4A8 matmul kernel over a grid of shapes, M, group
// sizes and thread counts, against a read-bandwidth probe, an int8 peak probe and OpenBLAS f32.
int run_kernel_bench(int argc, char** argv, int first);

}  // namespace dq4::cli::bench
