#pragma once
// One persistent pool of worker threads for the whole process. Work is a number of independent
// tasks; the calling thread takes part, workers spin briefly between jobs (decode issues many
// short jobs back to back) and then sleep. No thread is created per call.

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
  void worker_loop(int index);
  void drain_tasks();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::mutex run_mutex_;  // one job at a time

  // The job being run; written by run() before the generation is bumped.
  const std::function<void(int64_t)>* task_ = nullptr;
  int64_t task_count_ = 0;
  int job_threads_ = 0;
  std::atomic<int64_t> next_task_{0};
  std::atomic<int> busy_workers_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;
  std::mutex error_mutex_;
};

}  // namespace dq4
