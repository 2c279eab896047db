#pragma once
// Machine reference numbers that `dq4 bench kernels` compares the kernels with, measured in the
// same run: the size of the last-level cache, the DRAM read bandwidth (a read-only streaming
// probe) and the compute peak of the instruction a kernel is built on (int8 dot or f32 FMA).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench/stats.h"
#include "dq4/kernels/aligned_buffer.h"
#include "dq4/kernels/kernel_family.h"
#include "dq4/kernels/w4a8.h"

namespace dq4 {
class ThreadPool;
}

namespace dq4::cli::bench {

struct CacheSize {
  size_t bytes = 0;
  std::string source;  // where the number came from (sysconf, sysfs or a fallback)
};

// The last-level (L3) cache of this machine.
CacheSize last_level_cache();

struct Bandwidth {
  int threads = 0;
  Summary gbps;  // GB/s (1e9 bytes per second) read
};

// A read-only streaming probe over a buffer allocated and first-touched (in parallel) once, so
// that it can be re-measured cheaply during a run.
class ReadBandwidthProbe {
 public:
  explicit ReadBandwidthProbe(size_t bytes);  // rounded to 2 MiB
  ReadBandwidthProbe(const ReadBandwidthProbe&) = delete;
  ReadBandwidthProbe& operator=(const ReadBandwidthProbe&) = delete;

  size_t bytes() const { return buffer_.size(); }
  // `passes` passes per thread count, the thread counts alternating pass by pass so that noise
  // from other processes hits all of them alike; each thread streams one contiguous part with the
  // widest loads the CPU has.
  // Fills the buffer again first if release() dropped it.
  std::vector<Bandwidth> measure(const std::vector<int>& threads, int passes);
  // Returns the buffer's pages to the OS until the next measure(), so that a benchmark's peak
  // RSS after it is its own.
  void release();
  // One timed read of the buffer's next `bytes` (wrapping around; a multiple of 256 at most the
  // buffer), split among `threads` threads of `pool`: a short probe to interleave with a
  // workload so that both meet the host in the same state. Returns the seconds it took.
  double read_next(ThreadPool& pool, int threads, size_t bytes);

 private:
  void fill();

  AlignedBuffer buffer_;  // huge pages where the OS has them, as the model's weights
  size_t cursor_ = 0;     // where read_next() goes on
  bool released_ = false;
};

// Reads `bytes` at `data` (64-byte aligned) once with the widest loads, e.g. so that the dirty
// cache lines left by writing a buffer are written back before the buffer is timed.
void read_through(const void* data, size_t bytes);

// The int8 dot-product instruction sequences a kernel can be bounded by.
enum class DotPeak {
  none,          // no probe for this CPU or kernel
  avx512_vnni,   // VPDPBUSD zmm: 64 u8 x s8 multiply-adds into int32
  avx_vnni,      // VPDPBUSD ymm (VEX): 32
  avx2_maddubs,  // VPMADDUBSW ymm: 32 u8 x s8 multiplies summed in pairs to int16
  amx_int8,      // TDPBUSD on 16 x 64-byte tiles: 16 x 16 x 64
};

// The peak that bounds `kernel` on this CPU: that of its own instruction when a probe runs it,
// else (the scalar reference, an Arm kernel) that of the best W4A8 kernel this CPU runs that a
// probe does; none when there is no such kernel. Which kernels this CPU runs, and which is best,
// the W4A8 registry says.
DotPeak dot_peak_for(const w4a8::Kernel& kernel);
const char* dot_peak_name(DotPeak peak);

struct DotPeakRate {
  int threads = 0;
  Summary gops;  // G ops per second (2 per multiply-add), all threads together
};

// Each thread runs a loop of independent accumulators of `peak` held in registers, on `pool`
// (default: the global pool). `peak`: as dot_peak_for() chose it (none: no rates).
std::vector<DotPeakRate> dot_peak(DotPeak peak, const std::vector<int>& threads, int runs,
                                  ThreadPool* pool = nullptr);

// The f32 FMA instruction sequences a kernel can be bounded by (W4A16, dense f32).
enum class FmaPeak {
  none,
  avx512,  // VFMADD231PS zmm: 16 lanes
  avx2,    // VFMADD231PS ymm: 8 lanes
};

// The probe of the FMA of the kernels named `isa` ("avx512f", "avx2"), or none.
FmaPeak fma_peak_of(std::string_view isa);

// The peak that bounds `kernel` of `family` on this CPU: that of its own ISA when a probe runs it,
// else that of the best kernel of `family` this CPU runs that a probe does; none when there is no
// such kernel.
template <class Kernel>
FmaPeak fma_peak_for(const KernelFamily<Kernel>& family, const Kernel& kernel) {
  if (const FmaPeak own = fma_peak_of(family.name(kernel));
      own != FmaPeak::none && family.supported(kernel))
    return own;
  for (auto it = family.kernels().rbegin(); it != family.kernels().rend(); ++it)
    if (const FmaPeak best = fma_peak_of(family.name(**it));
        best != FmaPeak::none && family.supported(**it))
      return best;
  return FmaPeak::none;
}
const char* fma_peak_name(FmaPeak peak);
// GFLOP/s (2 per lane of an FMA), like dot_peak; `peak` as fma_peak_for() chose it.
std::vector<DotPeakRate> fma_peak(FmaPeak peak, const std::vector<int>& threads, int runs);

}  // namespace dq4::cli::bench
