// attention::run() and run_batch() reject every invalid argument with a dq4::Error naming the
// field.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "attention_test_support.h"
#include "expect_error.h"

namespace dq4::test {
namespace {

// A valid call (2 kv heads x 2, 3 tokens after 5 cached ones, blocks of 4), altered by `change`.
void expect_rejected(const std::function<void(attention::Args&)>& change,
                     std::initializer_list<std::string> fragments) {
  AttentionCase c;
  c.head_dim = 16;
  c.num_kv_heads = 2;
  c.group = 2;
  c.tokens = 3;
  c.first_position = 5;
  c.block_size = 4;
  const AttentionData d = make_attention_data(c);
  std::vector<float> out(static_cast<size_t>(c.tokens * d.ld));
  for (const attention::Kernel* kernel : runnable_attention_kernels()) {
    attention::Args a = d.args(c, out.data());
    attention::run(a, *kernel);  // the unaltered call is valid
    change(a);
    expect_error([&] { attention::run(a, *kernel); }, fragments);
  }
}

TEST(AttentionBadInput, NullPointers) {
  expect_rejected([](attention::Args& a) { a.q = nullptr; }, {"attention::run", "q is null"});
  expect_rejected([](attention::Args& a) { a.out = nullptr; }, {"out is null"});
  expect_rejected([](attention::Args& a) { a.kv.keys = nullptr; }, {"kv.keys is null"});
  expect_rejected([](attention::Args& a) { a.kv.values = nullptr; }, {"kv.values is null"});
  expect_rejected([](attention::Args& a) { a.kv.block_table = nullptr; },
                  {"kv.block_table is null"});
}

TEST(AttentionBadInput, NonPositiveSizes) {
  for (int64_t bad : {int64_t{0}, int64_t{-3}}) {
    expect_rejected([&](attention::Args& a) { a.tokens = bad; }, {"tokens must be positive"});
    expect_rejected([&](attention::Args& a) { a.num_heads = bad; }, {"num_heads must be positive"});
    expect_rejected([&](attention::Args& a) { a.num_kv_heads = bad; },
                    {"num_kv_heads must be positive"});
    expect_rejected([&](attention::Args& a) { a.head_dim = bad; }, {"head_dim must be positive"});
    expect_rejected([&](attention::Args& a) { a.kv.block_size = bad; },
                    {"kv.block_size must be positive"});
  }
  expect_rejected([](attention::Args& a) { a.first_position = -1; }, {"first_position"});
  expect_rejected([](attention::Args& a) { a.window = -1; }, {"window must be >= 0"});
  expect_rejected([](attention::Args& a) { a.max_threads = -1; }, {"max_threads"});
}

TEST(AttentionBadInput, HeadsAndStrides) {
  expect_rejected([](attention::Args& a) { a.num_heads = 3; },
                  {"num_heads 3 is not a multiple of num_kv_heads 2"});
  expect_rejected([](attention::Args& a) { a.ldq = a.num_heads * a.head_dim - 1; },
                  {"ldq 63 is smaller"});
  expect_rejected([](attention::Args& a) { a.ldo = 1; }, {"ldo 1 is smaller"});
  expect_rejected([](attention::Args& a) { a.kv.block_stride -= 1; }, {"kv.block_stride"});
  expect_rejected([](attention::Args& a) { a.kv.type = static_cast<attention::KvType>(7); },
                  {"kv.type"});
}

TEST(AttentionBadInput, ScaleMustBeFinite) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), INFINITY, -INFINITY})
    expect_rejected([&](attention::Args& a) { a.scale = bad; }, {"scale must be finite"});
}

TEST(AttentionBadInput, SoftcapMustBeFiniteAndNotNegative) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), INFINITY, -1.0f})
    expect_rejected([&](attention::Args& a) { a.softcap = bad; }, {"softcap must be finite"});
}

TEST(AttentionBadInput, OverlapAndAlignment) {
  expect_rejected([](attention::Args& a) { a.out = const_cast<float*>(a.q) + 1; },
                  {"out overlaps q"});
  expect_rejected(
      [](attention::Args& a) {
        a.q = reinterpret_cast<const float*>(reinterpret_cast<const char*>(a.q) + 2);
      },
      {"q is not aligned"});
  expect_rejected(
      [](attention::Args& a) { a.kv.values = reinterpret_cast<const char*>(a.kv.values) + 1; },
      {"kv.values is not aligned"});
}

TEST(AttentionBadInput, NegativeBlockTableEntry) {
  // The context of 8 tokens spans blocks 0 and 1 of the table.
  std::vector<int32_t> table = {0, -1};
  expect_rejected([&](attention::Args& a) { a.kv.block_table = table.data(); },
                  {"kv.block_table[1] is negative"});
}

// A batch checks every sequence, names what is wrong, and refuses sequences on different pools.
TEST(AttentionBadInput, BatchChecksEverySequence) {
  AttentionCase c;
  c.tokens = 2;
  const AttentionData d = make_attention_data(c);
  std::vector<float> out0(static_cast<size_t>(c.tokens * d.ld)),
      out1(static_cast<size_t>(c.tokens * d.ld));
  ThreadPool pool(2);
  std::vector<attention::Args> batch = {d.args(c, out0.data()), d.args(c, out1.data())};
  attention::run_batch(batch);  // valid
  batch[1].scale = std::numeric_limits<float>::infinity();
  expect_error([&] { attention::run_batch(batch); }, {"attention::run", "scale must be finite"});
  batch[1] = d.args(c, out1.data());
  batch[1].pool = &pool;
  expect_error([&] { attention::run_batch(batch); }, {"same pool and max_threads"});
  attention::run_batch({});  // nothing to do
}

// A kernel this CPU cannot run is refused, never executed.
TEST(AttentionBadInput, EveryKernelRunsOrIsRefused) {
  AttentionCase c;
  const AttentionData d = make_attention_data(c);
  std::vector<float> out(static_cast<size_t>(d.ld));
  for (const attention::Kernel* kernel : attention::family().kernels()) {
    if (attention::family().supported(*kernel))
      EXPECT_NO_THROW(attention::run(d.args(c, out.data()), *kernel));
    else
      expect_error([&] { attention::run(d.args(c, out.data()), *kernel); },
                   {"attention::run", "which this CPU lacks"});
  }
}

}  // namespace
}  // namespace dq4::test
