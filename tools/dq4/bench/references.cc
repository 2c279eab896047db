#include "bench/references.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <utility>

namespace dq4::cli::bench {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kColdCap = size_t{2} << 30;  // more only costs setup time and memory
constexpr int kBandwidthPasses = 6;
constexpr int kPeakRuns = 5;

// "1 thr 14.0, 2 thr 27.5"
std::string per_thread(const std::map<int, double>& values, const char* format) {
  std::string out;
  for (const auto& [threads, v] : values) {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    out += (out.empty() ? "" : ", ") + std::to_string(threads) + " thr " + buf;
  }
  return out;
}

}  // namespace

size_t cold_budget(std::FILE* info, int64_t override_mib) {
  const CacheSize llc = last_level_cache();
  if (override_mib > 0) {
    const size_t budget = static_cast<size_t>(override_mib) * kMiB;
    std::fprintf(info,
                 "last-level cache: %zu MiB (%s); cold operands: copies cycled over >= %zu MiB "
                 "each (--cold-mib)%s\n",
                 llc.bytes / kMiB, llc.source.c_str(), budget / kMiB,
                 budget < 4 * llc.bytes ? ": the copies do NOT exceed 4x LLC" : "");
    return budget;
  }
  size_t budget = 4 * llc.bytes;
  std::string note;
  if (budget > kColdCap) {
    budget = kColdCap;
    note =
        ", capped at " + std::to_string(kColdCap / kMiB) + " MiB: the copies do NOT exceed 4x LLC";
  }
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const size_t memory_quarter =
      pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) / 4 : 0;
  if (memory_quarter > 0 && budget > memory_quarter) {
    budget = memory_quarter;
    note = ", capped at a quarter of the memory: the copies do NOT exceed 4x LLC";
  }
  std::fprintf(
      info, "last-level cache: %zu MiB (%s); cold operands: copies cycled over >= %zu MiB each%s\n",
      llc.bytes / kMiB, llc.source.c_str(), budget / kMiB, note.c_str());
  return budget;
}

std::string load_average() {
  std::ifstream file("/proc/loadavg");
  std::string a, b, c;
  if (!(file >> a >> b >> c)) return "unknown";
  return a + " " + b + " " + c;
}

MachineReferences::MachineReferences(size_t probe_bytes, DotPeak dot_peak, FmaPeak fma_peak,
                                     std::vector<int> threads)
    : read_probe_(probe_bytes),
      peak_(dot_peak),
      fma_peak_(fma_peak),
      threads_(std::move(threads)) {}

void MachineReferences::reset() {
  read_gbps_.clear();
  peak_gops_.clear();
  fma_gflops_.clear();
}

void MachineReferences::measure(std::FILE* out, const std::string& when) {
  std::fprintf(stderr, "probing read bandwidth and compute peaks...\n");
  std::map<int, double> read, peak, fma;
  std::string spread;
  for (const Bandwidth& bw : read_probe_.measure(threads_, kBandwidthPasses)) {
    read[bw.threads] = bw.gbps.median;
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s%d thr %.1f-%.1f", spread.empty() ? "" : ", ", bw.threads,
                  bw.gbps.min, bw.gbps.max);
    spread += buf;
  }
  for (const DotPeakRate& rate : dot_peak(peak_, threads_, kPeakRuns))
    peak[rate.threads] = rate.gops.median;
  for (const DotPeakRate& rate : fma_peak(fma_peak_, threads_, kPeakRuns))
    fma[rate.threads] = rate.gops.median;
  std::fprintf(out, "# %s (load %s): read GB/s %s (range %s)", when.c_str(), load_average().c_str(),
               per_thread(read, "%.1f").c_str(), spread.c_str());
  if (peak_ != DotPeak::none)
    std::fprintf(out, "; int8 peak G int-op/s %s",
                 peak.empty() ? "- (no probe)" : per_thread(peak, "%.0f").c_str());
  if (fma_peak_ != FmaPeak::none)
    std::fprintf(out, "; f32 FMA peak GFLOP/s %s",
                 fma.empty() ? "- (no probe)" : per_thread(fma, "%.0f").c_str());
  std::fprintf(out, "\n");
  std::fflush(out);
  for (const auto& [threads, v] : read) read_gbps_[threads] = std::max(read_gbps_[threads], v);
  for (const auto& [threads, v] : peak) peak_gops_[threads] = std::max(peak_gops_[threads], v);
  for (const auto& [threads, v] : fma) fma_gflops_[threads] = std::max(fma_gflops_[threads], v);
}

double MachineReferences::peak_gops(int threads) const {
  const auto it = peak_gops_.find(threads);
  return it == peak_gops_.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
}

double MachineReferences::fma_gflops(int threads) const {
  const auto it = fma_gflops_.find(threads);
  return it == fma_gflops_.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
}

std::string MachineReferences::method() const {
  std::string out = "references (before and after each shape, the larger median): read bandwidth " +
                    std::to_string(kBandwidthPasses) + " passes over " +
                    std::to_string(read_probe_.bytes() / kMiB) + " MiB per thread count";
  if (peak_ != DotPeak::none)
    out += std::string("; int8 peak ") + dot_peak_name(peak_) + ", " + std::to_string(kPeakRuns) +
           " runs";
  if (fma_peak_ != FmaPeak::none)
    out += std::string("; f32 FMA peak ") + fma_peak_name(fma_peak_) + ", " +
           std::to_string(kPeakRuns) + " runs";
  return out;
}

}  // namespace dq4::cli::bench
