#include "dq4/kernels/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
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

TEST(ThreadPool, UsesSeveralThreadsAndHonoursTheLimit) {
  ThreadPool pool(3);
  std::mutex m;
  std::set<std::thread::id> ids;
  auto record = [&](int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::lock_guard<std::mutex> lock(m);
    ids.insert(std::this_thread::get_id());
  };
  pool.run(30, record);
  EXPECT_GE(ids.size(), 2u);
  ids.clear();
  pool.run(30, record, 1);
  EXPECT_EQ(ids.size(), 1u);
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
