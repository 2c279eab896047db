#pragma once
// Results of `dq4 bench kernels`: one record per case, printed as a table or as one JSON array.

#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "bench/stats.h"

namespace dq4::cli::bench {

// A ratio or time that does not apply to a case is NaN (printed as "-" or null).
inline constexpr double kNotApplicable = std::numeric_limits<double>::quiet_NaN();

struct CaseResult {
  std::string kind = "w4a8";  // one of kKernelKinds (kernel_grid.h)
  std::string isa;            // the kernel's name (what DQ4_ISA and --isa take)
  std::string variant;        // what it computes: types, ISA, tiles (printed in the table)
  int64_t n = 0, k = 0, m = 0, group = 0;  // group 0: channelwise
  bool grouped = true;                     // false: the kind has no groups (printed "-", null)
  int threads = 0;
  Summary seconds;                          // per call
  int64_t weight_bytes = 0;                 // packed weights read per call
  int64_t cold_copies = 0;                  // copies of the packed weights cycled through
  double gflops = 0;                        // 2 m n k / median time
  double weight_gbps = 0;                   // weight_bytes / median time
  double read_bw_gbps = 0;                  // median of the read-bandwidth probe at `threads`
  double int8_peak_gops = kNotApplicable;   // median of the int8 peak probe at `threads` (w4a8)
  double fma_peak_gflops = kNotApplicable;  // median of the f32 FMA peak probe (w4a16)
  double bw_ratio = kNotApplicable;         // weight_gbps / read_bw_gbps, for m <= 4
  double peak_ratio = kNotApplicable;       // gflops / the kind's peak, for m >= 64
  // The time the machine allows, measured in the same run at the same thread count: the larger
  // of (packed weights + f32 activations) / read bandwidth and 2mnk / the kind's compute peak
  // (int8 dot for w4a8, f32 FMA for the others); roofline_ratio = that time / median time.
  double roofline_seconds = kNotApplicable;
  double roofline_ratio = kNotApplicable;
  bool compute_bound = false;              // the compute term is the larger one
  double f32_seconds = kNotApplicable;     // median OpenBLAS time on the same weights in f32
  double speedup_vs_f32 = kNotApplicable;  // f32_seconds / median time
  // Per-call cost that does not grow with the weights (activation quantization + dispatch,
  // measured on one thread) and its share of the call, for m = 1.
  double fixed_seconds = kNotApplicable;
  double quant_share = kNotApplicable;
};

void print_table_header(std::FILE* out);
void print_table_row(std::FILE* out, const CaseResult& r);
// The whole array, one object per line.
void print_json(std::FILE* out, const std::vector<CaseResult>& results);

}  // namespace dq4::cli::bench
