#pragma once
// One persistent pool of worker threads for the whole process. Work is a number of independent
// tasks; the calling thread takes part. A forward pass issues many short jobs back to back, so
// between jobs workers spin (for about 2 ms, kSpin in thread_pool.cc) and the hand-off of a job
// costs one cache-line transfer each way; a pool left idle longer sleeps. A worker that has not
// joined a job by the time the caller runs out of tasks is not waited for (on a busy host it may
// not be running at all). No thread is created per call.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

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

  // Runs task(i) for i in [0, tasks) on at most `max_threads` threads (0 = all), returns when
  // all are done. The first exception thrown by a task is rethrown here.
  void run(int64_t tasks, const std::function<void(int64_t)>& task, int max_threads = 0);

 private:
  void worker_loop();
  void drain_tasks();
  // Waits for a job of a generation other than `seen` and returns its word.
  uint64_t wait_for_job(uint64_t seen);

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one job at a time

  // The job being run; written by run() before its word is published.
  const std::function<void(int64_t)>* task_ = nullptr;
  int64_t task_count_ = 0;
  std::exception_ptr error_;
  std::mutex error_mutex_;
  // Each on its own cache line: the task counter is hit by every thread, the job word and the
  // count of finished workers cross between the caller and the workers once per job.
  alignas(64) std::atomic<int64_t> next_task_{0};
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
