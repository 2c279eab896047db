#include "bench/kernel_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "args.h"
#include "bench/attention_cases.h"
#include "bench/cold_copies.h"
#include "bench/dense_cases.h"
#include "bench/f32_baseline.h"
#include "bench/fixed_cost.h"
#include "bench/kernel_grid.h"
#include "bench/probes.h"
#include "bench/references.h"
#include "bench/report.h"
#include "bench/roofline_plot.h"
#include "bench/test_weights.h"
#include "bench/timing.h"
#include "bench/w4a16_cases.h"
#include "dq4/kernels/cpu_features.h"
#include "dq4/kernels/dense.h"
#include "dq4/kernels/thread_pool.h"
#include "dq4/kernels/w4a16.h"
#include "dq4/kernels/w4a8.h"

namespace dq4::cli::bench {
namespace {

// OpenBLAS (pthread build) workers keep spinning for a while after a call; give them time to go
// to sleep before the next kernel measurement.
constexpr auto kBlasSettle = std::chrono::milliseconds(250);

using Clock = std::chrono::steady_clock;

struct Run {
  Run(const KernelGrid& g, std::FILE* out, size_t budget)
      : grid(g),
        info(out),
        isa(w4a8::family().name(*g.kernel)),
        cold_budget(budget),
        refs(budget, g.has_kind("w4a8") ? dot_peak_for(*g.kernel) : DotPeak::none,
             g.has_kind("w4a16") ? fma_peak_for(w4a16::family(), *g.w4a16_kernel)
             : g.has_kind("dense-bf16") || g.has_kind("dense-f32")
                 ? fma_peak_for(dense::family(), *g.dense_kernel)
             : g.has_kind("attention") ? fma_peak_for(attention::family(), *g.attention_kernel)
                                       : FmaPeak::none,
             g.threads) {}

  const KernelGrid& grid;
  std::FILE* info;  // notes and header: stdout for the table, stderr with --json
  std::string isa;
  size_t cold_budget;
  MachineReferences refs;
  std::vector<CaseResult> results;
  int64_t cases_started = 0;
  std::map<std::pair<int64_t, int64_t>, FixedCost> fixed_costs;  // (k, group), for M = 1
  std::map<std::pair<int64_t, int64_t>, FixedCost> w4a16_fixed_costs;
};

std::string join(const std::vector<int>& values) {
  std::string out;
  for (int v : values) {
    if (!out.empty()) out += ',';
    out += std::to_string(v);
  }
  return out;
}

TimingPlan plan_for(const KernelGrid& grid) {
  TimingPlan plan;
  plan.min_time_s = grid.min_time_s;
  plan.min_calls = 3;
  plan.warmup_s = std::min(0.2, 0.2 * grid.min_time_s);
  return plan;
}

w4a8::MatmulArgs matmul_args(const float* x, int64_t m, int64_t k, float* y, int64_t n,
                             int threads) {
  w4a8::MatmulArgs args;
  args.m = m;
  args.x = x;
  args.ldx = k;
  args.y = y;
  args.ldy = n;
  args.pool = &ThreadPool::global();
  args.max_threads = threads;
  return args;
}

// The kernel cases of one shape and group, on cold copies of the packed weights.
std::vector<CaseResult> run_kernel_cases(Run& run, const Shape& s, const Int4Weights& weights,
                                         const float* x, float* y) {
  const KernelGrid& grid = run.grid;
  const w4a8::PackedWeights packed = w4a8::pack(weights.source(), *grid.kernel);
  const FixedCost* fixed = nullptr;
  if (std::find(grid.ms.begin(), grid.ms.end(), 1) != grid.ms.end()) {
    const auto key = std::make_pair(s.k, weights.group);
    if (run.fixed_costs.count(key) == 0)
      run.fixed_costs[key] = fixed_call_cost(*grid.kernel, s.k, weights.group, x, 1, 1);
    fixed = &run.fixed_costs[key];
  }
  ColdCopies<w4a8::PackedWeights> cold(packed, packed.bytes(), run.cold_budget);
  // Write back the dirty lines the copying left in the caches before the first case is timed.
  for (size_t i = 0; i < cold.count(); ++i) read_through(cold[i].data(), cold[i].bytes());
  std::vector<CaseResult> block;
  for (int64_t m : grid.ms) {
    for (int threads : grid.threads) {
      std::fprintf(stderr, "[%lld/%lld] %s %lldx%lld group %lld M %lld threads %d\n",
                   static_cast<long long>(++run.cases_started),
                   static_cast<long long>(grid.cases()), run.isa.c_str(),
                   static_cast<long long>(s.n), static_cast<long long>(s.k),
                   static_cast<long long>(weights.group), static_cast<long long>(m), threads);
      const w4a8::MatmulArgs args = matmul_args(x, m, s.k, y, s.n, threads);
      CaseResult r;
      r.isa = run.isa;
      r.variant = w4a8::family().variant(*grid.kernel);
      r.n = s.n;
      r.k = s.k;
      r.m = m;
      r.group = weights.group;
      r.threads = threads;
      r.seconds = time_calls([&] { w4a8::matmul(cold.next(), args); }, plan_for(grid));
      r.weight_bytes = static_cast<int64_t>(packed.bytes());
      r.cold_copies = static_cast<int64_t>(cold.count());
      const double t = r.seconds.median;
      r.gflops = 2.0 * static_cast<double>(m) * static_cast<double>(s.n) *
                 static_cast<double>(s.k) / t * 1e-9;
      r.weight_gbps = static_cast<double>(r.weight_bytes) / t * 1e-9;
      if (m == 1 && fixed != nullptr) {
        r.fixed_seconds = fixed->seconds;
        r.quant_share = fixed->seconds / t;
      }
      block.push_back(r);
    }
  }
  return block;
}

// OpenBLAS on the same weights in f32 (`w`: [n, k]), cold as well: median seconds per
// (m, threads).
std::map<std::pair<int64_t, int>, double> run_f32_cases(Run& run, const Shape& s,
                                                        const AlignedBuffer& w, const float* x,
                                                        float* y) {
  const KernelGrid& grid = run.grid;
  ColdCopies<AlignedBuffer> cold(w, w.size(), run.cold_budget);
  // Write back the dirty lines the copying left in the caches before the first case is timed.
  for (size_t i = 0; i < cold.count(); ++i) read_through(cold[i].data(), cold[i].size());
  std::map<std::pair<int64_t, int>, double> seconds;
  for (int64_t m : grid.ms) {
    for (int threads : grid.threads) {
      std::fprintf(stderr, "[f32] OpenBLAS %lldx%lld M %lld threads %d\n",
                   static_cast<long long>(s.n), static_cast<long long>(s.k),
                   static_cast<long long>(m), threads);
      set_f32_threads(threads);
      const Summary t = time_calls(
          [&] {
            f32_matmul(reinterpret_cast<const float*>(cold.next().data()), s.n, s.k, x, m, y);
          },
          plan_for(grid));
      seconds[{m, threads}] = t.median;
    }
  }
  std::this_thread::sleep_for(kBlasSettle);
  return seconds;
}

// The ratios to the machine references (known once the shape is done) and to the f32 baseline.
void add_ratios(CaseResult& r, const MachineReferences& refs,
                const std::map<std::pair<int64_t, int>, double>& f32_seconds) {
  r.read_bw_gbps = refs.read_gbps(r.threads);
  if (r.m <= 4 || r.kind == "attention") r.bw_ratio = r.weight_gbps / r.read_bw_gbps;
  if (r.kind == "w4a8") {  // the int8 dot peak bounds only the W4A8 kernels
    r.int8_peak_gops = refs.peak_gops(r.threads);
    if (r.m >= 64) r.peak_ratio = r.gflops / r.int8_peak_gops;
  }
  // W4A16, dense and attention prefill are bounded by the f32 FMAs (avx512_bf16 does 2 per lane
  // and step).
  if (r.kind == "w4a16" || r.kind == "dense-bf16" || r.kind == "dense-f32" ||
      r.kind == "attention") {
    r.fma_peak_gflops = refs.fma_gflops(r.threads);
    if (r.m >= 64) r.peak_ratio = r.gflops / r.fma_peak_gflops;
  }
  const double compute_peak = r.kind == "w4a8" ? r.int8_peak_gops : r.fma_peak_gflops;
  const double bytes = static_cast<double>(r.weight_bytes) +
                       static_cast<double>(r.m) * static_cast<double>(r.k) * sizeof(float);
  const double memory_s = bytes / (r.read_bw_gbps * 1e9);
  const double compute_s = 2.0 * static_cast<double>(r.m) * static_cast<double>(r.n) *
                           static_cast<double>(r.k) / (compute_peak * 1e9);
  // Attention reads a KV cache, not weights and activations: no roofline of this form.
  if (r.kind != "attention" && std::isfinite(memory_s) && memory_s > 0) {
    // No compute probe for this CPU (NaN): the memory term alone.
    r.compute_bound = std::isfinite(compute_s) && compute_s > memory_s;
    r.roofline_seconds = r.compute_bound ? compute_s : memory_s;
    r.roofline_ratio = r.roofline_seconds / r.seconds.median;
  }
  if (const auto it = f32_seconds.find({r.m, r.threads}); it != f32_seconds.end()) {
    r.f32_seconds = it->second;
    r.speedup_vs_f32 = it->second / r.seconds.median;
  }
}

// The W4A16 cases of one shape and group (the same int4 weights as W4A8's).
void run_w4a16_kind(Run& run, const Shape& s, const Int4Weights& weights, const float* x, float* y,
                    std::vector<CaseResult>& cases) {
  const KernelGrid& grid = run.grid;
  W4A16Bench bench;
  bench.kernel = grid.w4a16_kernel;
  bench.ms = grid.ms;
  bench.threads = grid.threads;
  bench.plan = plan_for(grid);
  bench.cold_budget = run.cold_budget;
  bench.starting = [&](const std::string& kind, int64_t m, int threads) {
    std::fprintf(stderr, "[%lld/%lld] %s %s %lldx%lld group %lld M %lld threads %d\n",
                 static_cast<long long>(++run.cases_started), static_cast<long long>(grid.cases()),
                 kind.c_str(), std::string(w4a16::family().name(*grid.w4a16_kernel)).c_str(),
                 static_cast<long long>(s.n), static_cast<long long>(s.k),
                 static_cast<long long>(weights.group), static_cast<long long>(m), threads);
  };
  const std::vector<CaseResult> block =
      run_w4a16_cases(bench, s, weights, x, y, run.w4a16_fixed_costs);
  cases.insert(cases.end(), block.begin(), block.end());
}

// The dense kinds of the grid on one shape (and the f32 baseline if no W4A8 case measured it).
void run_dense_kinds(Run& run, const Shape& s, const float* x, float* y,
                     std::map<std::pair<int64_t, int>, double>& f32_seconds,
                     std::vector<CaseResult>& cases) {
  const KernelGrid& grid = run.grid;
  if (!grid.has_kind("dense-bf16") && !grid.has_kind("dense-f32")) return;
  const AlignedBuffer weights = random_dense_weights(s.n, s.k, 300 + static_cast<uint64_t>(s.k));
  DenseBench bench;
  bench.kernel = grid.dense_kernel;
  bench.ms = grid.ms;
  bench.threads = grid.threads;
  bench.plan = plan_for(grid);
  bench.cold_budget = run.cold_budget;
  bench.starting = [&](const std::string& kind, int64_t m, int threads) {
    std::fprintf(stderr, "[%lld/%lld] %s %s %lldx%lld M %lld threads %d\n",
                 static_cast<long long>(++run.cases_started), static_cast<long long>(grid.cases()),
                 kind.c_str(), std::string(dense::family().name(*grid.dense_kernel)).c_str(),
                 static_cast<long long>(s.n), static_cast<long long>(s.k),
                 static_cast<long long>(m), threads);
  };
  for (const char* kind : {"dense-bf16", "dense-f32"}) {
    if (!grid.has_kind(kind)) continue;
    const std::vector<CaseResult> block = run_dense_cases(bench, kind, s, weights, x, y);
    cases.insert(cases.end(), block.begin(), block.end());
  }
  if (grid.baseline && f32_seconds.empty()) f32_seconds = run_f32_cases(run, s, weights, x, y);
}

void run_shape(Run& run, const Shape& s) {
  const KernelGrid& grid = run.grid;
  const std::string shape = std::to_string(s.n) + "x" + std::to_string(s.k);
  run.refs.reset();
  run.refs.measure(run.info, "before " + shape);
  const int64_t max_m = *std::max_element(grid.ms.begin(), grid.ms.end());
  const std::vector<float> x =
      random_normal(static_cast<size_t>(max_m * s.k), 1000 + static_cast<uint64_t>(s.k));
  AlignedBuffer y(static_cast<size_t>(max_m * s.n) * sizeof(float));
  float* yp = reinterpret_cast<float*>(y.data());
  const std::vector<int32_t> nibbles = random_nibbles(s.n, s.k, 17);
  // The f32 time does not depend on the group size: measured once per shape, on the weights of
  // the first group size.
  std::map<std::pair<int64_t, int>, double> f32_seconds;
  std::vector<CaseResult> cases;
  const bool int4 = grid.has_kind("w4a8") || grid.has_kind("w4a16");
  for (int64_t group : int4 ? grid.groups : std::vector<int64_t>{}) {
    const Int4Weights weights = random_int4_weights(nibbles, s.n, s.k, group == s.k ? 0 : group,
                                                    100 + static_cast<uint64_t>(group));
    if (grid.has_kind("w4a8")) {
      const std::vector<CaseResult> block = run_kernel_cases(run, s, weights, x.data(), yp);
      cases.insert(cases.end(), block.begin(), block.end());
    }
    if (grid.has_kind("w4a16")) run_w4a16_kind(run, s, weights, x.data(), yp, cases);
    if (grid.baseline && f32_seconds.empty())
      f32_seconds = run_f32_cases(run, s, weights.dequantized(), x.data(), yp);
  }
  run_dense_kinds(run, s, x.data(), yp, f32_seconds, cases);
  run.refs.measure(run.info, "after " + shape);
  for (CaseResult& r : cases) {
    add_ratios(r, run.refs, f32_seconds);
    if (!grid.json) print_table_row(stdout, r);
    run.results.push_back(r);
  }
}

// The attention cases, between their own measurements of the machine references.
void run_attention_kind(Run& run) {
  const KernelGrid& grid = run.grid;
  run.refs.reset();
  run.refs.measure(run.info, "before attention");
  AttentionBench bench;
  bench.kernel = grid.attention_kernel;
  bench.threads = grid.threads;
  bench.plan = plan_for(grid);
  bench.cold_budget = run.cold_budget;
  bench.starting = [&](const std::string& what, int threads) {
    std::fprintf(stderr, "[%lld/%lld] attention %s %s threads %d\n",
                 static_cast<long long>(++run.cases_started), static_cast<long long>(grid.cases()),
                 std::string(attention::family().name(*grid.attention_kernel)).c_str(),
                 what.c_str(), threads);
  };
  std::vector<CaseResult> cases = run_attention_cases(bench);
  run.refs.measure(run.info, "after attention");
  for (CaseResult& r : cases) {
    add_ratios(r, run.refs, {});
    if (!grid.json) print_table_row(stdout, r);
    run.results.push_back(r);
  }
}

}  // namespace

int run_kernel_bench(int argc, char** argv, int first) {
  Args args(
      "bench kernels",
      "Speed of the matmul kernels on cold weights, per kind (--kind): w4a8 (int4 weights x\n"
      "per-row int8 activations -> f32), w4a16 (the same int4 weights x f32 activations),\n"
      "dense-bf16 and dense-f32 (unquantized weights x f32), attention (Llama-3.2-1B's and "
      "OLMoE's\n"
      "heads over a paged F32 / BF16 KV cache: N = heads x head_dim, K = context, M = new tokens, "
      "wGB/s =\n"
      "keys and values read; bw_ratio for every M).\n"
      "Per case GFLOP/s (2MNK/t), packed-weight GB/s and, measured in the same run,\n"
      "roofline_ratio = max((packed weights + f32 activations) / read bandwidth, 2MNK / compute\n"
      "peak) / time, with the bound it is against (m: memory, c: compute),\n"
      "bw_ratio = weight GB/s / read bandwidth (M <= 4), peak_ratio = GFLOP/s / int8 dot peak\n"
      "(w4a8, M >= 64) or f32 FMA peak (w4a16, M >= 64), the speedup over OpenBLAS sgemv/sgemm on\n"
      "the same weights in f32, and for w4a8 and w4a16 at M = 1 the share of the per-call fixed\n"
      "cost (activation quantization or check + dispatch).\n"
      "Times are medians. Progress goes to stderr. DQ4_THREADS sets the thread pool's size.");
  declare_kernel_bench_options(args);
  if (!args.parse(argc, argv, first)) return 0;
  const KernelGrid grid = kernel_grid(args);
  const auto start = Clock::now();

  std::FILE* info = grid.json ? stderr : stdout;
  std::string kinds;
  for (const std::string& kind : grid.kinds) kinds += (kinds.empty() ? "" : ",") + kind;
  std::fprintf(info,
               "dq4 bench kernels%s: kinds %s, w4a8 kernel %s, w4a16 kernel %s, dense kernel %s, "
               "attention kernel %s, threads %s (pool %d), cpu: %s\n",
               grid.quick ? " --quick" : "", kinds.c_str(),
               std::string(w4a8::family().name(*grid.kernel)).c_str(),
               std::string(w4a16::family().name(*grid.w4a16_kernel)).c_str(),
               std::string(dense::family().name(*grid.dense_kernel)).c_str(),
               std::string(attention::family().name(*grid.attention_kernel)).c_str(),
               join(grid.threads).c_str(), ThreadPool::global().size(),
               cpu_features().to_string().c_str());
  if (grid.baseline) std::fprintf(info, "f32 baseline: %s\n", f32_library().c_str());
  std::fprintf(info, "load average: %s\n", load_average().c_str());
  Run run(grid, info, cold_budget(info, grid.cold_mib));
  std::fprintf(info, "%s\n", run.refs.method().c_str());
  if (!grid.json) print_table_header(stdout);

  if (grid.has_matmul_kind())
    for (const Shape& s : grid.shapes) run_shape(run, s);
  if (grid.has_kind("attention")) run_attention_kind(run);

  if (grid.json) print_json(stdout, run.results);
  if (!grid.plot.empty()) {
    write_roofline_svg(grid.plot, run.results);
    std::fprintf(info, "roofline plot: %s\n", grid.plot.c_str());
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::fprintf(info, "%lld cases in %.1f s; load average now: %s\n",
               static_cast<long long>(grid.cases()), elapsed, load_average().c_str());
  return 0;
}

}  // namespace dq4::cli::bench
