// The AMX tile model (src/kernels/amx/tile_model.h) against the scalar definitions of the Intel
// SDM: the four int8 dot products with wrapping int32 sums, the zeroing of everything outside the
// configured shape, the configuration's #GP checks and the instructions' #UD checks.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../src/kernels/amx/tile_model.h"
#include "dq4/kernels/error.h"

namespace dq4::amx {
namespace {

// A C (rows x n dwords), A (rows x k dwords), B (k rows x n dwords) configuration in tmm0..2.
TileConfig dot_config(int rows, int n, int k) {
  TileConfig c;
  c.set(0, rows, 4 * n);
  c.set(1, rows, 4 * k);
  c.set(2, k, 4 * n);
  return c;
}

// The fault message `f` throws, or "" when it does not throw.
template <class F>
std::string fault_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

int32_t extend(uint8_t v, bool is_signed) { return is_signed ? int8_t(v) : int32_t(v); }

enum class Op { ss, su, us, uu };

void run_op(TileModel& t, Op op) {
  switch (op) {
    case Op::ss:
      return t.dpbssd(0, 1, 2);
    case Op::su:
      return t.dpbsud(0, 1, 2);
    case Op::us:
      return t.dpbusd(0, 1, 2);
    case Op::uu:
      return t.dpbuud(0, 1, 2);
  }
}

TEST(AmxTileModel, DotProductsMatchTheScalarDefinitionAndWrap) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  TileModel& t = TileModel::current();
  const struct {
    int rows, n, k;
  } shapes[] = {{16, 16, 16}, {1, 1, 1}, {7, 3, 5}, {16, 8, 16}, {3, 16, 2}};
  for (Op op : {Op::ss, Op::su, Op::us, Op::uu}) {
    const bool sa = op == Op::ss || op == Op::su, sb = op == Op::ss || op == Op::us;
    for (const auto& s : shapes) {
      SCOPED_TRACE("op " + std::to_string(int(op)) + " shape " + std::to_string(s.rows) + "x" +
                   std::to_string(s.n) + "x" + std::to_string(s.k));
      const TileConfig config = dot_config(s.rows, s.n, s.k);
      t.loadconfig(&config);
      std::vector<uint8_t> a(16 * 64), b(16 * 64);
      for (auto& v : a) v = uint8_t(byte(rng));
      for (auto& v : b) v = uint8_t(byte(rng));
      // Accumulators near the int32 limits, so that the sums wrap.
      std::vector<int32_t> c(16 * 16);
      for (size_t i = 0; i < c.size(); ++i) c[i] = i % 2 ? INT32_MAX - 5 : INT32_MIN + 3;
      t.load(0, c.data(), 64);
      t.load(1, a.data(), 64);
      t.load(2, b.data(), 64);
      run_op(t, op);
      std::vector<int32_t> got(16 * 16, -1);
      t.store(0, got.data(), 64);
      for (int m = 0; m < s.rows; ++m)
        for (int n = 0; n < s.n; ++n) {
          uint32_t want = uint32_t(c[m * 16 + n]);
          for (int kk = 0; kk < 4 * s.k; ++kk)
            want += uint32_t(extend(a[m * 64 + kk], sa) *
                             extend(b[(kk / 4) * 64 + 4 * n + kk % 4], sb));
          ASSERT_EQ(got[m * 16 + n], int32_t(want)) << "m " << m << " n " << n;
        }
      // Outside the configured shape: the store leaves memory alone, the register holds zeros.
      for (int m = 0; m < 16; ++m)
        for (int n = 0; n < 16; ++n)
          if (m >= s.rows || n >= s.n) {
            ASSERT_EQ(got[m * 16 + n], -1);
          }
      const uint8_t* reg = t.bytes(0);
      for (int m = 0; m < 16; ++m)
        for (int i = 0; i < 64; ++i)
          if (m >= s.rows || i >= 4 * s.n) {
            ASSERT_EQ(reg[m * 64 + i], 0) << m << " " << i;
          }
    }
  }
  t.release();
}

TEST(AmxTileModel, LoadUsesTheStrideAndZeroesOutsideTheShape) {
  TileModel& t = TileModel::current();
  TileConfig config;
  config.set(3, 5, 12);
  t.loadconfig(&config);
  std::vector<uint8_t> memory(5 * 100);
  for (size_t i = 0; i < memory.size(); ++i) memory[i] = uint8_t(i * 7 + 1);
  t.load(3, memory.data(), 100);
  for (int r = 0; r < 16; ++r)
    for (int i = 0; i < 64; ++i)
      ASSERT_EQ(t.bytes(3)[r * 64 + i], r < 5 && i < 12 ? memory[r * 100 + i] : 0) << r << " " << i;
  std::vector<uint8_t> out(5 * 100, 0xee);
  t.store(3, out.data(), 100);
  for (int r = 0; r < 5; ++r)
    for (int i = 0; i < 100; ++i)
      ASSERT_EQ(out[r * 100 + i], i < 12 ? memory[r * 100 + i] : 0xee) << r << " " << i;
  t.zero(3);
  for (int i = 0; i < 16 * 64; ++i) ASSERT_EQ(t.bytes(3)[i], 0);
  t.release();
}

TEST(AmxTileModel, LoadConfigZeroesTheTilesAndPaletteZeroReleases) {
  TileModel& t = TileModel::current();
  TileConfig config;
  config.set(0, 16, 64);
  t.loadconfig(&config);
  std::vector<uint8_t> ones(16 * 64, 1);
  t.load(0, ones.data(), 64);
  t.loadconfig(&config);
  for (int i = 0; i < 16 * 64; ++i) ASSERT_EQ(t.bytes(0)[i], 0);
  EXPECT_TRUE(t.configured());
  const TileConfig init;
  t.loadconfig(&init);
  EXPECT_FALSE(t.configured());
  EXPECT_NE(fault_of([&] { t.zero(0); }).find("#UD"), std::string::npos);
}

TEST(AmxTileModel, InvalidConfigurationsFaultWithGp) {
  TileModel& t = TileModel::current();
  TileConfig valid;
  valid.set(0, 16, 64);
  auto expect_gp = [&](TileConfig c, const char* what) {
    const std::string message = fault_of([&] { t.loadconfig(&c); });
    EXPECT_EQ(message.rfind("#GP", 0), 0u) << what << ": " << message;
    EXPECT_FALSE(t.configured()) << what;
  };
  TileConfig c = valid;
  c.palette = 2;
  expect_gp(c, "palette 2");
  c = valid;
  c.rows[0] = 17;
  expect_gp(c, "17 rows");
  c = valid;
  c.colsb[0] = 68;
  expect_gp(c, "68 bytes per row");
  c = valid;
  c.reserved0[3] = 1;
  expect_gp(c, "reserved byte");
  c = valid;
  c.rows[9] = 1;
  c.colsb[9] = 4;
  expect_gp(c, "a ninth tile");
  c = valid;
  c.rows[1] = 4;
  expect_gp(c, "rows without bytes per row");
  c = valid;
  c.start_row = 2;
  expect_gp(c, "start_row");
  t.loadconfig(&valid);
  EXPECT_TRUE(t.configured());
  t.release();
}

TEST(AmxTileModel, MisshapenOrUnconfiguredOperandsFaultWithUd) {
  TileModel& t = TileModel::current();
  auto expect_ud = [&](const TileConfig& c, auto&& op, const char* what) {
    t.loadconfig(&c);
    const std::string message = fault_of(op);
    EXPECT_EQ(message.rfind("#UD", 0), 0u) << what << ": " << message;
  };
  t.release();
  uint8_t memory[1024] = {};
  EXPECT_EQ(fault_of([&] { t.load(0, memory, 64); }).rfind("#UD", 0), 0u) << "unconfigured";
  TileConfig c = dot_config(16, 16, 16);
  expect_ud(
      c, [&] { t.dpbssd(0, 0, 2); }, "aliased tiles");
  expect_ud(
      c, [&] { t.dpbssd(0, 1, 5); }, "unconfigured source");
  expect_ud(
      c, [&] { t.load(8, memory, 64); }, "no tile 8");
  c = dot_config(16, 16, 16);
  c.rows[1] = 8;
  expect_ud(
      c, [&] { t.dpbusd(0, 1, 2); }, "A rows differ from C rows");
  c = dot_config(16, 16, 16);
  c.rows[2] = 8;
  expect_ud(
      c, [&] { t.dpbusd(0, 1, 2); }, "B rows differ from A dwords");
  c = dot_config(16, 16, 16);
  c.colsb[2] = 32;
  expect_ud(
      c, [&] { t.dpbsud(0, 1, 2); }, "B bytes per row differ from C's");
  c = dot_config(16, 16, 16);
  c.colsb[1] = 62;
  c.rows[2] = 15;
  expect_ud(
      c, [&] { t.dpbuud(0, 1, 2); }, "bytes per row not a multiple of 4");
  t.release();
}

TEST(AmxTileModel, EachThreadHasItsOwnTileState) {
  TileModel& t = TileModel::current();
  TileConfig c;
  c.set(0, 16, 64);
  t.loadconfig(&c);
  bool other_configured = true;
  std::thread([&] { other_configured = TileModel::current().configured(); }).join();
  EXPECT_FALSE(other_configured);
  EXPECT_TRUE(t.configured());
  t.release();
}

}  // namespace
}  // namespace dq4::amx
