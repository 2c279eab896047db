#pragma once
// What `dq4 bench kernels` measures: its options and the grid of cases they select.

#include <cstdint>
#include <string>
#include <vector>

#include "args.h"
#include "dq4/kernels/attention.h"
#include "dq4/kernels/dense.h"
#include "dq4/kernels/w4a16.h"
#include "dq4/kernels/w4a8.h"

namespace dq4::cli::bench {

struct Shape {
  int64_t n = 0, k = 0;  // output channels x input features
};

// The kinds of kernel `dq4 bench kernels` measures (--kind); a family adds its own here.
inline constexpr const char* kKernelKinds[] = {
    "w4a8",        // int4 weights x per-row int8 activations, over the group sizes
    "w4a16",       // the same int4 weights x f32 activations (weight-only), over the group sizes
    "dense-bf16",  // unquantized BF16 weights (e.g. lm_head) x f32 activations
    "dense-f32",   // unquantized F32 weights x f32 activations
    "attention",   // paged-KV attention, Llama-3.2-1B and OLMoE heads (bench/attention_cases.h)
};

struct KernelGrid {
  std::vector<std::string> kinds;  // a subset of kKernelKinds, in that order
  std::vector<Shape> shapes;
  std::vector<int64_t> ms;
  std::vector<int64_t> groups;  // 0: channelwise
  std::vector<int> threads;
  const w4a8::Kernel* kernel = nullptr;
  const dense::Kernel* dense_kernel = nullptr;
  const w4a16::Kernel* w4a16_kernel = nullptr;
  const attention::Kernel* attention_kernel = nullptr;
  double min_time_s = 0;  // timed per case and operand (kernel, f32 baseline)
  bool quick = false;
  bool json = false;
  bool baseline = true;
  int64_t cold_mib = 0;  // bytes the copies of a cold operand fill; 0: 4x the last-level cache
  std::string plot;      // --plot: SVG file of the roofline, or empty

  bool has_kind(const std::string& kind) const;
  bool has_matmul_kind() const;  // a kind measured over the shapes (all but attention)
  int64_t cases() const;
};

void declare_kernel_bench_options(Args& args);
// The grid the parsed options select. Throws dq4::Error for values out of range.
KernelGrid kernel_grid(const Args& args);

// "2048x8192,512x2048"
std::vector<Shape> parse_shapes(const std::string& text);

}  // namespace dq4::cli::bench
