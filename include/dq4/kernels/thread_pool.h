#pragma once
// One persistent pool of worker threads for the whole process. A job is a number of independent
// tasks, or several stages of them in order; the calling thread takes part. A forward pass issues
// many short jobs back to back, so between jobs workers spin (for about 2 ms, kSpin in
// thread_pool.cc) and the hand-off of a job costs one cache-line transfer each way; a pool left
// idle longer sleeps. A worker that has not joined a job by the time the caller runs out of tasks
// is not waited for (on a busy host it may not be running at all). No thread is created and
// nothing is allocated per job: tasks are passed by reference (FunctionRef).

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "dq4/kernels/function_ref.h"

namespace dq4 {

class ThreadPool {
 public:
  // `threads` counts the calling thread: a pool of 1 runs everything inline.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The process-wide pool, sized by DQ4_THREADS or else the number of online CPUs.
  static ThreadPool& global();

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  using Task = FunctionRef<void(int64_t)>;

  // Runs task(i) for i in [0, tasks) on at most `max_threads` threads (0 = all), returns when
  // all are done. The first exception thrown by a task is rethrown here.
  void run(int64_t tasks, Task task, int max_threads = 0);

  // One stage of a job: task(i) for i in [0, tasks).
  struct Stage {
    int64_t tasks = 0;
    Task task;
  };
  // Runs the stages as one job, as run() runs its tasks: a task of a stage starts once every
  // task of the stages before it has finished, so a stage may read what earlier ones wrote.
  // Tasks are taken in order, so a thread that waits at a stage's start waits only for tasks
  // that other threads are already running. After a task throws, the tasks not yet started are
  // skipped and the first exception is rethrown here.
  void run_stages(std::span<const Stage> stages, int max_threads = 0);

  // Jobs run so far: the calls of run() and run_stages() that had a task to run, whether handed
  // to workers or run inline.
  uint64_t jobs() const { return jobs_.load(std::memory_order_relaxed); }

 private:
  void worker_loop();
  void drain_tasks();
  // Waits until `tasks` tasks of the job have finished or one has failed.
  void wait_for_tasks(int64_t tasks);
  // Waits for a job of a generation other than `seen` and returns its word.
  uint64_t wait_for_job(uint64_t seen);

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one job at a time

  // The job being run; written by run_stages() before its word is published.
  const Stage* stages_ = nullptr;
  int64_t task_count_ = 0;  // of every stage
  std::exception_ptr error_;
  std::mutex error_mutex_;
  std::atomic<uint64_t> jobs_{0};
  // Each on its own cache line: the task counter is hit by every thread, the job word and the
  // count of finished workers cross between the caller and the workers once per job.
  alignas(64) std::atomic<int64_t> next_task_{0};
  // Tasks finished (in order of stages: no task finishes before the stages before it), and
  // whether one has thrown.
  alignas(64) std::atomic<int64_t> finished_tasks_{0};
  std::atomic<bool> failed_{false};
  // generation, threads taking part, closed (no more workers may join), workers joined
  alignas(64) std::atomic<uint64_t> job_{0};
  alignas(64) std::atomic<int> finished_workers_{0};
  // Sleeping workers wait on `wake_`; run() takes `sleep_mutex_` only when some are asleep.
  alignas(64) std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
};

}  // namespace dq4
