#include "bench/report.h"

#include <cmath>

namespace dq4::cli::bench {
namespace {

std::string format(const char* fmt, double v) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string duration(double s) {
  if (!std::isfinite(s)) return "-";
  if (s < 1e-3) return format("%.1f us", s * 1e6);
  if (s < 1.0) return format("%.2f ms", s * 1e3);
  return format("%.3f s", s);
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

void print_table_header(std::FILE* out) {
  std::fprintf(out, "%-10s %-36s %12s %5s %4s %3s %10s %9s %7s %9s %8s %8s %7s %7s\n", "kind",
               "variant", "NxK", "group", "M", "thr", "time", "GFLOP/s", "wGB/s", "roofline",
               "bw_ratio", "peak_rat", "vs_f32", "quant%");
}

void print_table_row(std::FILE* out, const CaseResult& r) {
  const std::string shape = std::to_string(r.n) + "x" + std::to_string(r.k);
  const std::string group = !r.grouped ? "-" : r.group == 0 ? "chan" : std::to_string(r.group);
  // "0.812 c": the roofline ratio and which bound it is against (c: compute, m: memory)
  const std::string roofline =
      format("%.3f", r.roofline_ratio) +
      (std::isfinite(r.roofline_ratio) ? (r.compute_bound ? " c" : " m") : "");
  std::fprintf(out, "%-10s %-36s %12s %5s %4lld %3d %10s %9.1f %7.2f %9s %8s %8s %7s %7s\n",
               r.kind.c_str(), r.variant.c_str(), shape.c_str(), group.c_str(),
               static_cast<long long>(r.m), r.threads, duration(r.seconds.median).c_str(), r.gflops,
               r.weight_gbps, roofline.c_str(), format("%.3f", r.bw_ratio).c_str(),
               format("%.3f", r.peak_ratio).c_str(), format("%.2fx", r.speedup_vs_f32).c_str(),
               format("%.2f", 100 * r.quant_share).c_str());
  std::fflush(out);
}

void print_json(std::FILE* out, const std::vector<CaseResult>& results) {
  std::fputs("[\n", out);
  for (size_t i = 0; i < results.size(); ++i) {
    const CaseResult& r = results[i];
    std::fprintf(
        out,
        "  {\"kind\": \"%s\", \"isa\": \"%s\", \"variant\": \"%s\", \"n\": %lld, \"k\": %lld, "
        "\"m\": %lld, "
        "\"group\": %s, \"threads\": %d, "
        "\"time_us\": %s, \"time_p10_us\": %s, \"time_p90_us\": %s, \"calls\": %d, "
        "\"gflops\": %s, \"weight_bytes\": %lld, \"weight_gbps\": %s, \"cold_copies\": %lld, "
        "\"read_bw_gbps\": %s, \"int8_peak_gops\": %s, \"fma_peak_gflops\": %s, "
        "\"roofline_ratio\": %s, \"roofline_bound\": %s, \"bw_ratio\": %s, \"peak_ratio\": %s, "
        "\"f32_time_us\": %s, \"speedup_vs_f32\": %s, \"fixed_us\": %s, \"quant_share\": %s}%s\n",
        r.kind.c_str(), r.isa.c_str(), r.variant.c_str(), static_cast<long long>(r.n),
        static_cast<long long>(r.k), static_cast<long long>(r.m),
        r.grouped ? std::to_string(r.group).c_str() : "null", r.threads,
        json_number(r.seconds.median * 1e6).c_str(), json_number(r.seconds.p10 * 1e6).c_str(),
        json_number(r.seconds.p90 * 1e6).c_str(), r.seconds.samples, json_number(r.gflops).c_str(),
        static_cast<long long>(r.weight_bytes), json_number(r.weight_gbps).c_str(),
        static_cast<long long>(r.cold_copies), json_number(r.read_bw_gbps).c_str(),
        json_number(r.int8_peak_gops).c_str(), json_number(r.fma_peak_gflops).c_str(),
        json_number(r.roofline_ratio).c_str(),
        !std::isfinite(r.roofline_ratio) ? "null"
        : r.compute_bound                ? "\"compute\""
                                         : "\"memory\"",
        json_number(r.bw_ratio).c_str(), json_number(r.peak_ratio).c_str(),
        json_number(r.f32_seconds * 1e6).c_str(), json_number(r.speedup_vs_f32).c_str(),
        json_number(r.fixed_seconds * 1e6).c_str(), json_number(r.quant_share).c_str(),
        i + 1 < results.size() ? "," : "");
  }
  std::fputs("]\n", out);
}

}  // namespace dq4::cli::bench
