#include "dq4/thread_pool.h"

#include <cstdlib>
#include <string>

#include "dq4/error.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace dq4 {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

// Set while this thread runs a task of some pool: a nested run() then executes inline instead of
// waiting for workers that may all be busy with the outer job.
thread_local bool in_pool_task = false;

// Spinning this long between jobs covers the gap between the matmuls of one decode step.
constexpr int kSpinIterations = 20000;

int threads_from_environment() {
  if (const char* env = std::getenv("DQ4_THREADS")) {
    char* end = nullptr;
    const long value = std::strtol(env, &end, 10);
    if (end == env || *end != '\0' || value < 1 || value > 1024)
      throw Error(std::string("DQ4_THREADS must be an integer in [1, 1024], got '") + env + "'");
    return static_cast<int>(value);
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  if (threads < 1) throw Error("ThreadPool: threads must be >= 1, got " + std::to_string(threads));
  workers_.reserve(threads - 1);
  for (int i = 0; i < threads - 1; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

ThreadPool& ThreadPool::global() {
  static ThreadPool pool(threads_from_environment());
  return pool;
}

void ThreadPool::drain_tasks() {
  for (;;) {
    const int64_t i = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (i >= task_count_) return;
    try {
      in_pool_task = true;
      (*task_)(i);
      in_pool_task = false;
    } catch (...) {
      in_pool_task = false;
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
      next_task_.store(task_count_, std::memory_order_relaxed);  // skip what is left
    }
  }
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t current = generation_.load(std::memory_order_acquire);
    for (int spin = 0; current == seen && spin < kSpinIterations; ++spin) {
      cpu_relax();
      current = generation_.load(std::memory_order_acquire);
    }
    if (current == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      current = generation_.load(std::memory_order_acquire);
    }
    seen = current;
    if (stop_.load()) return;
    if (index + 1 < job_threads_) drain_tasks();
    busy_workers_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::run(int64_t tasks, const std::function<void(int64_t)>& task, int max_threads) {
  if (tasks <= 0) return;
  const int threads = max_threads <= 0 || max_threads > size() ? size() : max_threads;
  if (threads == 1 || tasks == 1 || workers_.empty() || in_pool_task) {
    for (int64_t i = 0; i < tasks; ++i) task(i);
    return;
  }
  std::lock_guard<std::mutex> run_lock(run_mutex_);
  task_ = &task;
  task_count_ = tasks;
  job_threads_ = threads;
  error_ = nullptr;
  next_task_.store(0, std::memory_order_relaxed);
  busy_workers_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  wake_.notify_all();
  drain_tasks();
  // A worker may have been descheduled mid-task on a busy host: after a short spin, give up the
  // CPU so that it can finish instead of burning its time slice.
  for (int spin = 0; busy_workers_.load(std::memory_order_acquire) != 0; ++spin) {
    if (spin < kSpinIterations)
      cpu_relax();
    else
      std::this_thread::yield();
  }
  task_ = nullptr;
  if (error_) std::rethrow_exception(error_);
}

}  // namespace dq4
