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
    if (limit == 1)
      EXPECT_EQ(rendezvous.threads(), std::set<std::thread::id>{std::this_thread::get_id()});
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

}  // namespace
}  // namespace dq4
