#include "dq4/kernels/thread_pool.h"

#include <chrono>
#include <cstdlib>
#include <string>

#include "dq4/kernels/error.h"

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

// Workers spin this long after a job before they sleep: a decode step's jobs come a few to a few
// hundred microseconds apart, and waking a sleeping thread costs tens of microseconds.
constexpr auto kSpin = std::chrono::milliseconds(2);
// The caller spins this long for the workers to finish before it yields its CPU: on a busy host
// a worker may have been descheduled mid-task.
constexpr auto kFinishSpin = std::chrono::microseconds(200);
// Iterations between two looks at the clock while spinning.
constexpr int kSpinBatch = 64;

// The job word: generation << 33 | threads taking part << 17 | closed << 16 | workers joined.
constexpr int kGenerationShift = 33, kThreadsShift = 17;
constexpr uint64_t kClosed = uint64_t{1} << 16, kJoinedMask = kClosed - 1;
constexpr int kMaxThreads = 4096;

uint64_t generation_of(uint64_t job) { return job >> kGenerationShift; }
int threads_of(uint64_t job) { return static_cast<int>((job >> kThreadsShift) & 0xffff); }

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
  if (threads < 1 || threads > kMaxThreads)
    throw Error("ThreadPool: threads must be in [1, " + std::to_string(kMaxThreads) + "], got " +
                std::to_string(threads));
  workers_.reserve(threads - 1);
  for (int i = 0; i < threads - 1; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    job_.fetch_add(uint64_t{1} << kGenerationShift);
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

ThreadPool& ThreadPool::global() {
  static ThreadPool pool(threads_from_environment());
  return pool;
}

void ThreadPool::drain_tasks() {
  // This thread's place among the stages: the tasks it takes only ever move forward.
  const Stage* stage = stages_;
  int64_t first = 0;  // the task number of stage[0]
  for (;;) {
    const int64_t i = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (i >= task_count_) return;
    while (i >= first + stage->tasks) first += (stage++)->tasks;
    if (stage != stages_) wait_for_tasks(first);
    if (!failed_.load(std::memory_order_relaxed)) {
      try {
        in_pool_task = true;
        stage->task(i - first);
        in_pool_task = false;
      } catch (...) {
        in_pool_task = false;
        std::lock_guard<std::mutex> lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
        failed_.store(true, std::memory_order_relaxed);
        next_task_.store(task_count_, std::memory_order_relaxed);  // skip what is left
      }
    }
    finished_tasks_.fetch_add(1, std::memory_order_release);
  }
}

void ThreadPool::wait_for_tasks(int64_t tasks) {
  using Clock = std::chrono::steady_clock;
  if (finished_tasks_.load(std::memory_order_acquire) >= tasks) return;
  const auto spin_end = Clock::now() + kFinishSpin;
  bool spinning = true;
  while (finished_tasks_.load(std::memory_order_acquire) < tasks &&
         !failed_.load(std::memory_order_relaxed)) {
    if (spinning) {
      cpu_relax();
      spinning = Clock::now() < spin_end;
    } else {
      std::this_thread::yield();
    }
  }
}

uint64_t ThreadPool::wait_for_job(uint64_t seen) {
  using Clock = std::chrono::steady_clock;
  const auto spin_end = Clock::now() + kSpin;
  for (;;) {
    for (int i = 0; i < kSpinBatch; ++i) {
      const uint64_t job = job_.load(std::memory_order_acquire);
      if (generation_of(job) != seen) return job;
      cpu_relax();
    }
    if (Clock::now() >= spin_end) break;
  }
  // Announce the sleep before the last look at the job word; run() publishes the word before it
  // looks at sleepers_ (both sequentially consistent), so one of the two sees the other.
  std::unique_lock<std::mutex> lock(sleep_mutex_);
  sleepers_.fetch_add(1);
  wake_.wait(lock, [&] { return generation_of(job_.load()) != seen; });
  sleepers_.fetch_sub(1);
  return job_.load(std::memory_order_acquire);
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    uint64_t job = wait_for_job(seen);
    if (stop_.load()) return;
    seen = generation_of(job);
    // Join the job unless the caller has closed it (it ran out of tasks first) or enough workers
    // have joined; the caller waits only for those that joined.
    bool joined = false;
    while (!joined && generation_of(job) == seen && (job & kClosed) == 0 &&
           static_cast<int>(job & kJoinedMask) + 1 < threads_of(job))
      joined = job_.compare_exchange_weak(job, job + 1, std::memory_order_acq_rel);
    if (!joined) continue;
    drain_tasks();
    finished_workers_.fetch_add(1, std::memory_order_release);
  }
}

void ThreadPool::run(int64_t tasks, Task task, int max_threads) {
  if (tasks <= 0) return;
  const Stage stage{tasks, task};
  run_stages(std::span(&stage, 1), max_threads);
}

void ThreadPool::run_stages(std::span<const Stage> stages, int max_threads) {
  int64_t tasks = 0;
  for (const Stage& s : stages) {
    if (s.tasks < 0) throw Error("ThreadPool::run_stages: a stage has a negative task count");
    tasks += s.tasks;
  }
  if (tasks == 0) return;
  jobs_.fetch_add(1, std::memory_order_relaxed);
  const int threads = max_threads <= 0 || max_threads > size() ? size() : max_threads;
  if (threads == 1 || tasks == 1 || workers_.empty() || in_pool_task) {
    for (const Stage& s : stages)
      for (int64_t i = 0; i < s.tasks; ++i) s.task(i);
    return;
  }
  std::lock_guard<std::mutex> run_lock(run_mutex_);
  stages_ = stages.data();
  task_count_ = tasks;
  error_ = nullptr;
  failed_.store(false, std::memory_order_relaxed);
  next_task_.store(0, std::memory_order_relaxed);
  finished_tasks_.store(0, std::memory_order_relaxed);
  finished_workers_.store(0, std::memory_order_relaxed);
  const uint64_t generation = generation_of(job_.load(std::memory_order_relaxed)) + 1;
  job_.store(generation << kGenerationShift | static_cast<uint64_t>(threads) << kThreadsShift);
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> lock(sleep_mutex_); }  // a worker between its check and wait
    wake_.notify_all();
  }
  drain_tasks();
  // No task is left to start: close the job, so that a worker that has not joined yet (on a busy
  // host it may not even be running) is not waited for, and wait for those that joined.
  const int joined =
      static_cast<int>(job_.fetch_or(kClosed, std::memory_order_acq_rel) & kJoinedMask);
  using Clock = std::chrono::steady_clock;
  const auto spin_end = Clock::now() + kFinishSpin;
  bool spinning = true;
  while (finished_workers_.load(std::memory_order_acquire) != joined) {
    if (spinning) {
      cpu_relax();
      spinning = Clock::now() < spin_end;
    } else {
      std::this_thread::yield();
    }
  }
  stages_ = nullptr;
  if (error_) std::rethrow_exception(error_);
}

}  // namespace dq4
