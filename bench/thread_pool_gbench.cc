// Google Benchmark of the thread pool's hand-off: the cost of one run() whose tasks do nothing,
// so all that is timed is publishing the job, the workers picking it up and the caller seeing
// them done. Two cases: jobs back to back (a forward pass keeps the pool busy) and jobs after an
// idle gap that outlasts the workers' spin (they have to be woken).
//
//   handoff/threads:<T>              back to back
//   handoff_after_idle/threads:<T>   after 20 ms without work (manual time: the run() alone)

#include <benchmark/benchmark.h>

#include <chrono>
#include <thread>

#include "dq4/kernels/thread_pool.h"

namespace {

const auto empty_task = [](int64_t) {};

void handoff(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  dq4::ThreadPool pool(threads);
  for (auto _ : state) pool.run(threads, empty_task);
}
BENCHMARK(handoff)->ArgName("threads")->Arg(2)->Arg(4);

void handoff_after_idle(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  dq4::ThreadPool pool(threads);
  for (auto _ : state) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto start = std::chrono::steady_clock::now();
    pool.run(threads, empty_task);
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
}
BENCHMARK(handoff_after_idle)->ArgName("threads")->Arg(2)->UseManualTime()->Iterations(50);

}  // namespace

BENCHMARK_MAIN();
