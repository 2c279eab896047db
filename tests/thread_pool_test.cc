#include "dq4/kernels/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "dq4/kernels/error.h"

namespace dq4 {
namespace {

TEST(ThreadPool, RunsEveryTaskExactlyOnce) {
  ThreadPool pool(3);
  for (int64_t tasks : {1, 2, 7, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(tasks));
    pool.run(tasks, [&](int64_t i) { hits[i].fetch_add(1); });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  }
}

// Holds the first task each thread runs until `want` threads are inside tasks at once: a pool
// that hands tasks to that many threads gets past it however late any of them starts; one that
// does not is reported after half a minute instead of hanging.
class Rendezvous {
 public:
  explicit Rendezvous(size_t want) : want_(want) {}
  void arrive() {
    std::unique_lock lock(mutex_);
    if (!threads_.insert(std::this_thread::get_id()).second) return;
    all_in_.notify_all();
    if (!all_in_.wait_for(lock, std::chrono::seconds(30), [&] { return threads_.size() >= want_; }))
      gave_up_ = true;
  }
  std::set<std::thread::id> threads() {
    std::lock_guard lock(mutex_);
    return threads_;
  }
  bool gave_up() {
    std::lock_guard lock(mutex_);
    return gave_up_;
  }

 private:
  const size_t want_;
  std::mutex mutex_;
  std::condition_variable all_in_;
  std::set<std::thread::id> threads_;
  bool gave_up_ = false;
};

TEST(ThreadPool, UsesEveryThreadOfThePool) {
  ThreadPool pool(3);
  Rendezvous rendezvous(3);
  pool.run(30, [&](int64_t) { rendezvous.arrive(); });
  EXPECT_FALSE(rendezvous.gave_up()) << rendezvous.threads().size() << " of 3 threads took tasks";
  EXPECT_EQ(rendezvous.threads().size(), 3u);
}

// max_threads 1 and 2 of 3: that many threads meet inside tasks, and no other takes one. (A pool
// that ignored the limit shows it where another thread starts a task before the last is taken:
// each limited job comes right after one that every thread ran, so all of them are awake and
// watching for work, and has thousands of tasks that each give up the CPU.)
TEST(ThreadPool, HonoursTheThreadLimit) {
  ThreadPool pool(3);
  for (size_t limit : {1, 2}) {
    Rendezvous everyone(3);
    pool.run(3, [&](int64_t) { everyone.arrive(); });
    ASSERT_FALSE(everyone.gave_up());
    Rendezvous rendezvous(limit);
    pool.run(
        20000,
        [&](int64_t) {
          rendezvous.arrive();
          std::this_thread::yield();  // lets any other thread that could join run
        },
        static_cast<int>(limit));
    EXPECT_FALSE(rendezvous.gave_up());
    EXPECT_EQ(rendezvous.threads().size(), limit);
    if (limit == 1) {
      EXPECT_EQ(rendezvous.threads(), std::set<std::thread::id>{std::this_thread::get_id()});
    }
  }
}

TEST(ThreadPool, ManyShortJobsBackToBack) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  for (int job = 0; job < 2000; ++job) pool.run(4, [&](int64_t i) { sum.fetch_add(i); });
  EXPECT_EQ(sum.load(), 2000 * 6);
}

TEST(ThreadPool, RethrowsTheTaskException) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.run(10,
                        [](int64_t i) {
                          if (i == 7) throw std::runtime_error("task 7");
                        }),
               std::runtime_error);
  std::atomic<int> after{0};
  pool.run(5, [&](int64_t) { after.fetch_add(1); });  // still usable
  EXPECT_EQ(after.load(), 5);
}

TEST(ThreadPool, NestedRunExecutesInline) {
  ThreadPool pool(2);
  std::atomic<int> inner{0};
  pool.run(4, [&](int64_t) { pool.run(3, [&](int64_t) { inner.fetch_add(1); }); });
  EXPECT_EQ(inner.load(), 12);
}

TEST(ThreadPool, RejectsZeroThreads) { EXPECT_THROW(ThreadPool(0), Error); }

// Every task of a stage sees everything the stages before it wrote: each task of stage s reads
// the whole of stage s - 1's output and writes its own slot (no task of a stage waits for
// another of the same stage).
TEST(ThreadPoolStages, EachStageSeesEveryTaskOfTheStageBefore) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    constexpr int64_t kTasks = 7;
    for (int job = 0; job < 300; ++job) {
      std::vector<int64_t> first(kTasks, 0), second(kTasks, 0), third(kTasks, 0);
      std::atomic<int> stale{0};
      auto fill = [&](int64_t i) {
        int64_t v = i + 1;
        for (int spin = 0; spin < 200 * static_cast<int>(i + 1); ++spin) v = (v * 31 + 7) % 1009;
        first[i] = v + 1;  // never 0
      };
      auto sum_first = [&](int64_t i) {
        int64_t total = 0;
        for (int64_t v : first) {
          if (v == 0) stale.fetch_add(1);
          total += v;
        }
        second[i] = total + i;
      };
      auto check_second = [&](int64_t i) {
        for (int64_t t = 0; t < kTasks; ++t)
          if (second[t] == 0) stale.fetch_add(1);
        third[i] = 1;
      };
      const ThreadPool::Stage stages[] = {
          {kTasks, fill}, {0, fill}, {kTasks, sum_first}, {kTasks, check_second}};
      pool.run_stages(stages);
      ASSERT_EQ(stale.load(), 0) << threads << " threads, job " << job;
      for (int64_t t = 0; t < kTasks; ++t) ASSERT_EQ(third[t], 1);
    }
  }
}

TEST(ThreadPoolStages, AThrowingTaskSkipsTheLaterStages) {
  ThreadPool pool(3);
  std::atomic<int> later{0};
  auto fail = [](int64_t i) {
    if (i == 2) throw std::runtime_error("stage 0, task 2");
  };
  auto count = [&](int64_t) { later.fetch_add(1); };
  const ThreadPool::Stage stages[] = {{5, fail}, {8, count}};
  EXPECT_THROW(pool.run_stages(stages), std::runtime_error);
  EXPECT_EQ(later.load(), 0);
  std::atomic<int> after{0};
  pool.run(5, [&](int64_t) { after.fetch_add(1); });  // still usable
  EXPECT_EQ(after.load(), 5);
}

TEST(ThreadPoolStages, NegativeTaskCountIsAnError) {
  ThreadPool pool(2);
  auto none = [](int64_t) {};
  const ThreadPool::Stage stages[] = {{2, none}, {-1, none}};
  EXPECT_THROW(pool.run_stages(stages), Error);
}

TEST(ThreadPoolJobs, CountsEveryJobWithATaskInlineOrNot) {
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    auto none = [](int64_t) {};
    EXPECT_EQ(pool.jobs(), 0u);
    pool.run(4, none);
    pool.run(1, none);
    pool.run(0, none);  // nothing to run: no job
    const ThreadPool::Stage stages[] = {{2, none}, {3, none}};
    pool.run_stages(stages);
    pool.run(3, [&](int64_t) { pool.run(2, none); });  // nested: inline, still counted
    EXPECT_EQ(pool.jobs(), 4u + 3u) << threads << " threads";
  }
}

}  // namespace
}  // namespace dq4
