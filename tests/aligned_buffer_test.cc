// AlignedBuffer: zeroed, aligned, and copied/moved correctly on both of its paths (heap below
// 2 MiB, a huge-page-aligned anonymous mapping from 2 MiB up).

#include "dq4/kernels/aligned_buffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <vector>
#endif

namespace dq4 {
namespace {

bool all_zero(const AlignedBuffer& b) {
  return std::all_of(b.data(), b.data() + b.size(), [](uint8_t v) { return v == 0; });
}

uintptr_t address(const AlignedBuffer& b) { return reinterpret_cast<uintptr_t>(b.data()); }

TEST(AlignedBuffer, EverySizeIsZeroedAndAligned) {
  for (size_t bytes : {size_t{1}, size_t{100}, AlignedBuffer::kHugePage - 1,
                       AlignedBuffer::kHugePage, AlignedBuffer::kHugePage * 3 + 5}) {
    const AlignedBuffer b(bytes);
    ASSERT_EQ(b.size(), bytes);
    EXPECT_TRUE(all_zero(b)) << bytes;
    EXPECT_EQ(address(b) % AlignedBuffer::kAlignment, 0u) << bytes;
    if (bytes >= AlignedBuffer::kHugePage) {
      EXPECT_EQ(address(b) % AlignedBuffer::kHugePage, 0u) << bytes;
    }
  }
  EXPECT_EQ(AlignedBuffer(0).data(), nullptr);
}

TEST(AlignedBuffer, CopiesAndMovesKeepTheBytes) {
  for (size_t bytes : {size_t{4096}, AlignedBuffer::kHugePage + 64}) {
    AlignedBuffer a(bytes);
    for (size_t i = 0; i < bytes; ++i) a.data()[i] = static_cast<uint8_t>(i * 7 + 1);
    const AlignedBuffer copy(a);
    ASSERT_NE(copy.data(), a.data());
    EXPECT_TRUE(std::equal(a.data(), a.data() + bytes, copy.data())) << bytes;
    const uint8_t* before = a.data();
    AlignedBuffer moved(std::move(a));
    EXPECT_EQ(moved.data(), before);
    EXPECT_EQ(a.data(), nullptr);
    AlignedBuffer assigned;
    assigned = copy;
    EXPECT_TRUE(std::equal(copy.data(), copy.data() + bytes, assigned.data())) << bytes;
    // The last byte of a mapping is writable (the tail unmapped was past it).
    assigned.data()[bytes - 1] = 0xff;
    EXPECT_EQ(assigned.data()[bytes - 1], 0xff);
  }
}

#if defined(__linux__)
// A mapped buffer ends with its own last page: nothing is mapped (or made resident) past it, so a
// buffer a little over a huge page never costs a second one. mincore fails with ENOMEM on an
// address range that is not mapped.
TEST(AlignedBuffer, AMappingEndsAtTheBuffersLastPage) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (size_t bytes : {AlignedBuffer::kHugePage + 64, AlignedBuffer::kHugePage * 2 + 5 * page}) {
    AlignedBuffer b(bytes);
    std::fill(b.data(), b.data() + bytes, uint8_t{1});
    const size_t pages = (bytes + page - 1) / page;
    std::vector<unsigned char> resident(pages);
    ASSERT_EQ(mincore(b.data(), pages * page, resident.data()), 0) << bytes;
    EXPECT_TRUE(
        std::all_of(resident.begin(), resident.end(), [](unsigned char r) { return r & 1; }));
    unsigned char past = 0;
    errno = 0;
    EXPECT_EQ(mincore(b.data() + pages * page, page, &past), -1) << bytes;
    EXPECT_EQ(errno, ENOMEM) << bytes;
  }
}
#endif

}  // namespace
}  // namespace dq4
