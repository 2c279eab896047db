// Google Benchmark microbenchmarks of w4a8::pack(), w4a8::matmul() and the activation
// quantization, registered from one list of cases. Weights and activations stay hot in the
// caches here (each benchmark reuses one copy); for DRAM-cold weights and ratios to the machine's
// limits, run `dq4 bench kernels`.
//
//   pack/<source>/NxK/g<G>/threads:<T>   bytes/s of checkpoint input (int8 values or int32-packed
//                                        nibbles, plus scales); GB_per_thread: per thread, 1e9 B/s
//   matmul/NxK/g<G>/m:<M>/threads:<T>    GFLOP/s = 2MNK/t, bytes/s of packed weights
//   quantize/MxK                         w4a8::quantize_activations() of M rows of K (64-byte
//                                        aligned, as a model's rows are) on one thread with the
//                                        default kernel's quantizer; bytes/s of f32 input

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "bench/test_weights.h"
#include "dq4/kernels/aligned_buffer.h"
#include "dq4/kernels/thread_pool.h"
#include "dq4/kernels/w4a8.h"

namespace {

using dq4::cli::bench::Int4Weights;

struct Case {
  int64_t n, k, group, m;  // group 0: channelwise
};

// Llama-3.2-1B layers: decode (M = 1), small batches, prefill.
constexpr Case kCases[] = {
    {2048, 2048, 32, 1},  {512, 2048, 32, 1},    {8192, 2048, 32, 1},  {2048, 8192, 32, 1},
    {2048, 8192, 0, 1},   {2048, 8192, 128, 1},  {2048, 8192, 32, 4},  {2048, 8192, 32, 16},
    {2048, 8192, 32, 64}, {2048, 8192, 32, 256}, {2048, 8192, 0, 256}, {8192, 2048, 128, 256},
};
constexpr int kThreadCounts[] = {1, 2};
// Activation rows x K of the quantization cases: a decode step, a 16-stream step, prompts.
constexpr int64_t kQuantizeShapes[][2] = {
    {1, 2048}, {16, 2048}, {64, 2048}, {512, 2048}, {64, 8192}};

std::string shape_name(const Case& c) {
  return std::to_string(c.n) + "x" + std::to_string(c.k) + "/g" + std::to_string(c.group);
}

// Random weights of a case's shape and group size, owning the nibbles they point to.
struct Operands {
  std::vector<int32_t> nibbles;
  std::vector<int8_t> values;  // the same weights as int8 in [-8, 7]
  Int4Weights weights;

  explicit Operands(const Case& c)
      : nibbles(dq4::cli::bench::random_nibbles(c.n, c.k, 1)),
        weights(dq4::cli::bench::random_int4_weights(nibbles, c.n, c.k, c.group, 2)) {
    const int64_t words = (c.k + 7) / 8;
    values.resize(static_cast<size_t>(c.n * c.k));
    for (int64_t r = 0; r < c.n; ++r)
      for (int64_t i = 0; i < c.k; ++i)
        values[r * c.k + i] = static_cast<int8_t>(
            ((static_cast<uint32_t>(nibbles[r * words + i / 8]) >> (4 * (i % 8))) & 0xf) - 8);
  }
};

dq4::ThreadPool& pool_of(int threads) {
  static dq4::ThreadPool one(1);
  static dq4::ThreadPool two(2);
  return threads == 1 ? one : two;
}

void bench_pack(benchmark::State& state, Case c, bool from_values, int threads) {
  const Operands ops(c);
  dq4::int4::WeightSource source = ops.weights.source();
  if (from_values) {
    source.packed = nullptr;
    source.values = ops.values.data();
  }
  const double input_bytes = (from_values ? 1.0 : 0.5) * static_cast<double>(c.n * c.k) +
                             4.0 * static_cast<double>(ops.weights.scales.size());
  const dq4::w4a8::Kernel& kernel = dq4::w4a8::family().default_kernel();
  for (auto _ : state) {
    dq4::w4a8::PackedWeights packed = dq4::w4a8::pack(source, kernel, &pool_of(threads));
    benchmark::DoNotOptimize(packed.data());
  }
  state.SetBytesProcessed(
      static_cast<int64_t>(input_bytes * static_cast<double>(state.iterations())));
  state.counters["GB_per_thread"] = benchmark::Counter(
      input_bytes * 1e-9 / threads, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(dq4::w4a8::family().name(kernel)));
}

void bench_matmul(benchmark::State& state, Case c, int threads) {
  const Operands ops(c);
  const dq4::w4a8::Kernel& kernel = dq4::w4a8::family().default_kernel();
  const dq4::w4a8::PackedWeights packed = dq4::w4a8::pack(ops.weights.source(), kernel);
  const std::vector<float> x = dq4::cli::bench::random_normal(static_cast<size_t>(c.m * c.k), 3);
  std::vector<float> y(static_cast<size_t>(c.m * c.n));
  dq4::w4a8::MatmulArgs args;
  args.m = c.m;
  args.x = x.data();
  args.ldx = c.k;
  args.y = y.data();
  args.ldy = c.n;
  args.pool = &pool_of(threads);
  args.max_threads = threads;
  for (auto _ : state) {
    dq4::w4a8::matmul(packed, args);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(packed.bytes()) * state.iterations());
  state.counters["GFLOPs"] =
      benchmark::Counter(2e-9 * static_cast<double>(c.m * c.n) * static_cast<double>(c.k),
                         benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(dq4::w4a8::family().name(kernel)));
}

void bench_quantize(benchmark::State& state, int64_t m, int64_t k) {
  const std::vector<float> values = dq4::cli::bench::random_normal(static_cast<size_t>(m * k), 3);
  dq4::AlignedBuffer rows(values.size() * sizeof(float));
  std::copy(values.begin(), values.end(), reinterpret_cast<float*>(rows.data()));
  const float* x = reinterpret_cast<const float*>(rows.data());
  dq4::w4a8::QuantizedActivations q;
  for (auto _ : state) {
    dq4::w4a8::quantize_activations(x, m, k, k, q, &pool_of(1));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(rows.size()) * state.iterations());
  state.SetLabel(std::string(dq4::w4a8::family().name(dq4::w4a8::family().default_kernel())));
}

void register_benchmarks() {
  std::set<std::tuple<int64_t, int64_t, int64_t>> packed_shapes;
  for (const Case& c : kCases) {
    if (!packed_shapes.insert({c.n, c.k, c.group}).second) continue;
    for (const bool from_values : {false, true})
      for (int threads : kThreadCounts)
        benchmark::RegisterBenchmark(("pack/" + std::string(from_values ? "values" : "nibbles") +
                                      "/" + shape_name(c) + "/threads:" + std::to_string(threads))
                                         .c_str(),
                                     bench_pack, c, from_values, threads)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
  }
  for (const Case& c : kCases)
    for (int threads : kThreadCounts)
      benchmark::RegisterBenchmark(("matmul/" + shape_name(c) + "/m:" + std::to_string(c.m) +
                                    "/threads:" + std::to_string(threads))
                                       .c_str(),
                                   bench_matmul, c, threads)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
  for (const auto& [m, k] : kQuantizeShapes)
    benchmark::RegisterBenchmark(
        ("quantize/" + std::to_string(m) + "x" + std::to_string(k)).c_str(), bench_quantize, m, k)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  register_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
