#pragma once
// The machine limits `dq4 bench kernels` compares the kernel with, kept for a whole run and
// re-measured before and after each shape. On a shared host a probe that overlaps another
// process's work reads low; keeping the larger of the two medians makes the ratios compare with
// what the machine delivered around the cases rather than with a disturbed probe.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench/probes.h"

namespace dq4::cli::bench {

// Bytes each cold operand's copies fill together: 4x the last-level cache, capped at 2 GiB and at
// a quarter of the memory. Prints how it was chosen (and whether capped) to `info`.
// A positive `override_mib` replaces the default.
size_t cold_budget(std::FILE* info, int64_t override_mib);

// The 1, 5 and 15 minute load averages of /proc/loadavg.
std::string load_average();

class MachineReferences {
 public:
  // A read-bandwidth probe over `probe_bytes` and the compute peaks the measured kernels are
  // built on (DotPeak::none / FmaPeak::none: not measured).
  MachineReferences(size_t probe_bytes, DotPeak dot_peak, FmaPeak fma_peak,
                    std::vector<int> threads);

  // Forgets the measurements so far.
  void reset();
  // Measures all, keeping per thread count the larger median since reset(), and prints one line
  // naming `when` to `out`.
  void measure(std::FILE* out, const std::string& when);
  // Returns the bandwidth probe's buffer to the OS until the next measure().
  void release() { read_probe_.release(); }

  // Largest medians since reset() for `threads`; a peak is NaN when there is no probe.
  double read_gbps(int threads) const { return read_gbps_.at(threads); }
  double peak_gops(int threads) const;  // int8 G int-op/s
  double fma_gflops(int threads) const;
  // One line on how the references are measured.
  std::string method() const;

 private:
  ReadBandwidthProbe read_probe_;
  DotPeak peak_;
  FmaPeak fma_peak_;
  std::vector<int> threads_;
  std::map<int, double> read_gbps_, peak_gops_, fma_gflops_;
};

}  // namespace dq4::cli::bench
