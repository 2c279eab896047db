// The amx kernel's tile code through the tile model (the amx_model variant): that it runs on the
// tiles with the shape its group size needs, and that it takes the tiles back from other code on
// the same thread that reconfigured or released them. Its bits against the reference are checked
// with every other variant's (kernel_exact_test.cc and the other W4A8 tests).

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "../src/kernels/amx/tile_model.h"
#include "../src/kernels/w4a8/kernel.h"
#include "dq4/kernels/thread_pool.h"
#include "dq4/kernels/w4a8.h"
#include "w4a8_test_support.h"

#if defined(__x86_64__)
namespace dq4 {
namespace {

// The tile configuration the pool's (one) thread holds.
amx::TileConfig held_config(ThreadPool& pool) {
  amx::TileConfig c;
  pool.run(1, [&](int64_t) { c = amx::TileModel::current().config(); });
  return c;
}

TEST(W4A8Amx, RunsOnTilesAsDeepAsItsGroupsAllow) {
  const w4a8::Kernel* model = w4a8::family().find("amx_model");
  ASSERT_NE(model, nullptr);
  ThreadPool pool(1);
  // K per TDPBSSD: 64 bytes (B tiles of 16 rows of k-quads), 32 for groups of 32.
  for (const auto& [group, b_rows] : {std::pair{0, 16}, {32, 8}, {64, 16}, {128, 16}}) {
    test::W4A8Case c{.m = 33, .n = 70, .k = 256, .group = group};
    const test::W4A8Data d = test::make_data(c);
    pool.run(1, [](int64_t) { amx::TileModel::current().release(); });
    test::run_w4a8(c, d, *model, pool);
    const amx::TileConfig held = held_config(pool);
    EXPECT_EQ(held.palette, 1) << "group " << group;
    EXPECT_EQ(held.rows[6], b_rows) << "group " << group;
    EXPECT_EQ(held.colsb[4], 4 * b_rows) << "group " << group;
  }
}

TEST(W4A8Amx, TakesTheTilesBackFromOtherCodeOnTheThread) {
  const w4a8::Kernel* model = w4a8::family().find("amx_model");
  ASSERT_NE(model, nullptr);
  ThreadPool pool(1);
  test::W4A8Case c{.m = 20, .n = 64, .k = 128, .group = 64};
  const test::W4A8Data d = test::make_data(c);
  const std::vector<float> first = test::run_w4a8(c, d, *model, pool);
  // Another configuration, then none: the kernel must load its own again, not trust a cache.
  amx::TileConfig other;
  other.set(0, 1, 4);
  pool.run(1, [&](int64_t) { amx::TileModel::current().loadconfig(&other); });
  EXPECT_EQ(test::run_w4a8(c, d, *model, pool), first);
  pool.run(1, [](int64_t) { amx::TileModel::current().release(); });
  EXPECT_EQ(test::run_w4a8(c, d, *model, pool), first);
}

// Where a call goes is seen in the scratch it asks for: on the tiles, its rows' tile-order copy;
// handed to avx512_vnni, what that kernel asks for. The crossovers (docs/kernels.md): 8 rows
// channelwise and for groups of a multiple of 128, 12 for other multiples of 64, 16 for 32.
TEST(W4A8Amx, TakesDecodeBatchesFromItsGroupSizesCrossover) {
  const w4a8::Kernel* amx = w4a8::family().find("amx");
  const w4a8::Kernel* vnni = w4a8::family().find("avx512_vnni");
  ASSERT_NE(amx, nullptr);
  ASSERT_NE(vnni, nullptr);
  for (const auto& [group, first_on_tiles] :
       {std::pair{0, 8}, {128, 8}, {256, 8}, {64, 12}, {192, 12}, {32, 16}, {96, 16}}) {
    const w4a8::Layout l = w4a8::make_layout(512, 3072, group, amx->nr);
    for (int64_t rows = 1; rows <= 32; ++rows) {
      const bool on_tiles = amx->scratch_bytes(l, rows) != vnni->scratch_bytes(l, rows);
      EXPECT_EQ(on_tiles, rows >= first_on_tiles) << "group " << group << ", " << rows << " rows";
    }
  }
}

// Shapes the shared list (kernel_exact_test.cc) leaves to its M >= 16 rows alone: K over several
// K blocks with the last one partial, and a K not a multiple of 64 whose activations take several
// passes, the last of 16 rows (one A tile); a last row block of fewer than 32 rows (M = 16 alone,
// and after full blocks); groups batched into K blocks with more groups than one epilogue pass
// folds in, groups of 96 (half-deep tiles, two per block) with a short last group; several panels
// with the last one partial; every group size, on one thread and on several (the row and panel
// split). On the model everywhere, and on the unit where this machine has one.
TEST(W4A8Amx, KBlocksPassesAndGroupBatchesMatchTheReference) {
  std::vector<const w4a8::Kernel*> kernels;
  for (const char* name : {"amx_model", "amx"})
    if (const w4a8::Kernel* k = w4a8::family().find(name); k && w4a8::family().supported(*k))
      kernels.push_back(k);
  ASSERT_FALSE(kernels.empty());
  ThreadPool one(1), three(3);
  const w4a8::Kernel& reference = *w4a8::family().find("reference");
  for (const test::W4A8Case& c : {
           test::W4A8Case{.m = 40, .n = 130, .k = 512, .group = 0, .bias = true},
           test::W4A8Case{.m = 16, .n = 70, .k = 256, .group = 0},
           test::W4A8Case{
               .m = 45, .n = 70, .k = 384, .group = 32, .scale_type = int4::ScaleType::bf16},
           test::W4A8Case{
               .m = 33, .n = 100, .k = 640, .group = 64, .scale_type = int4::ScaleType::bf16},
           test::W4A8Case{.m = 80,
           .n = 64,
           .k = 1152,
           .group = 128,
           .bias = true,
           .scale_type = int4::ScaleType::bf16},
           test::W4A8Case{.m = 48, .n = 64, .k = 16416, .group = 0},
           test::W4A8Case{
               .m = 20, .n = 64, .k = 500, .group = 96, .scale_type = int4::ScaleType::bf16},
       }) {
    const test::W4A8Data d = test::make_data(c);
    const std::vector<float> want = test::run_w4a8(c, d, reference, one);
    for (const w4a8::Kernel* k : kernels)
      for (ThreadPool* pool : {&one, &three})
        ASSERT_EQ(test::run_w4a8(c, d, *k, *pool), want)
            << w4a8::family().name(*k) << " " << c.name() << " threads " << pool->size();
  }
}

// More threads than this machine has cores, each holding its own tile state across preemption
// and calls: every repeat gives the reference's bits. On an AMX machine this runs the real unit
// (`amx`) too, where the tile state is the OS's to save and restore.
TEST(W4A8Amx, ManyThreadsKeepTheirTilesAcrossCalls) {
  std::vector<const w4a8::Kernel*> kernels;
  for (const char* name : {"amx_model", "amx"})
    if (const w4a8::Kernel* k = w4a8::family().find(name); k && w4a8::family().supported(*k))
      kernels.push_back(k);
  ASSERT_FALSE(kernels.empty());
  ThreadPool pool(6);
  test::W4A8Case c{.m = 40, .n = 384, .k = 256, .group = 32};
  const test::W4A8Data d = test::make_data(c);
  const std::vector<float> want = test::run_w4a8(c, d, *w4a8::family().find("reference"), pool);
  for (const w4a8::Kernel* k : kernels) {
    for (int repeat = 0; repeat < 4; ++repeat)
      ASSERT_EQ(test::run_w4a8(c, d, *k, pool), want) << w4a8::family().name(*k);
  }
}

}  // namespace
}  // namespace dq4
#endif
