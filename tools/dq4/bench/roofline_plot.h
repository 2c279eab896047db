#pragma once
// `dq4 bench kernels --plot FILE.svg`: the roofline of a run as an SVG picture.

#include <string>
#include <vector>

#include "bench/report.h"

namespace dq4::cli::bench {

// One panel per thread count: achieved GFLOP/s against M (both log scales), a point per case of
// the first kind measured (w4a8 when present), coloured by group size, under the two limits
// measured in the same run: the compute peak (a horizontal line) and the read bandwidth times the
// cases' arithmetic intensity (2MNK / bytes of weights and activations, for the median shape).
// Throws dq4::Error naming the file if it cannot be written.
void write_roofline_svg(const std::string& path, const std::vector<CaseResult>& results);

}  // namespace dq4::cli::bench
