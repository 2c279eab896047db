// The scratch the kernel drivers hand to kernels: a user naming itself finds the scratch kept only
// when nothing else on the thread took it since its own last request of the same size.

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>

#include "../src/kernels/family.h"

namespace dq4 {
namespace {

// Owners far from those the drivers number from 1, on a thread of the test's own.
constexpr uint64_t kOwner = uint64_t{1} << 62, kOther = kOwner + 1;

TEST(ThreadScratch, KeptOnlyForTheSameOwnerAndSizeWithNothingBetween) {
  std::thread([] {
    bool kept = true;
    uint8_t* first = kernels::thread_scratch(4096, kOwner, &kept);
    EXPECT_FALSE(kept) << "a thread's first request";
    first[0] = 42;
    uint8_t* again = kernels::thread_scratch(4096, kOwner, &kept);
    EXPECT_TRUE(kept);
    EXPECT_EQ(again, first);
    EXPECT_EQ(again[0], 42);

    kernels::thread_scratch(4096, kOther, &kept);
    EXPECT_FALSE(kept) << "another owner";
    kernels::thread_scratch(4096, kOwner, &kept);
    EXPECT_FALSE(kept) << "back after another owner";

    kernels::thread_scratch(4096, kOwner, &kept);
    kernels::thread_scratch(1024);
    kernels::thread_scratch(4096, kOwner, &kept);
    EXPECT_FALSE(kept) << "after a use without an owner";

    kernels::thread_scratch(2048, kOwner, &kept);
    EXPECT_FALSE(kept) << "another size";
    kernels::thread_scratch(2048, 0, &kept);
    kernels::thread_scratch(2048, 0, &kept);
    EXPECT_FALSE(kept) << "owner 0 names no one";
  }).join();
}

TEST(ThreadScratch, EachThreadHasItsOwn) {
  bool kept_here = false;
  std::thread([&] { kernels::thread_scratch(512, kOwner, &kept_here); }).join();
  std::thread([&] { kernels::thread_scratch(512, kOwner, &kept_here); }).join();
  EXPECT_FALSE(kept_here) << "a new thread's scratch holds nothing of another's";
}

}  // namespace
}  // namespace dq4
