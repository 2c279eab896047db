// Model::forward allocates nothing once warm: 32 decode steps of a batch of sequences, after a
// prefill and a warm-up step, with every allocation through operator new counted (replaced
// below, for the whole executable: hence a test binary of its own).

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <optional>
#include <string>

#include "dq4/convert/synth.h"
#include "dq4/kernels/thread_pool.h"
#include "dq4/model/model.h"
#include "fixtures.h"
#include "model_batch.h"
#include "safetensors_writer.h"

namespace {

std::atomic<bool> counting{false};
std::atomic<int64_t> allocations{0};

void* allocate(std::size_t bytes, std::size_t alignment) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1);
  const std::size_t size = bytes == 0 ? 1 : bytes;
  void* p = alignment <= alignof(std::max_align_t)
                ? std::malloc(size)
                : std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

void* operator new(std::size_t bytes) { return allocate(bytes, 0); }
void* operator new(std::size_t bytes, std::align_val_t alignment) {
  return allocate(bytes, static_cast<std::size_t>(alignment));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace dq4 {
namespace {

struct AllocCase {
  const char* name;
  const char* fixture;
  std::optional<int64_t> quantize_group;
};

class WarmForward : public ::testing::TestWithParam<AllocCase> {};

// Operator new calls in 32 decode steps of 4 sequences, after a prefill and a warm-up step.
int64_t decode_allocations(Model& model) {
  ThreadPool pool(3);
  constexpr int kSteps = 32;
  test::BatchRunner runner(model, 4, 7, kSteps + 1, pool);
  runner.prefill();
  runner.decode_step();  // warm-up: the workspace grows to a decode step's shapes

  allocations.store(0);
  for (int step = 0; step < kSteps; ++step) {
    counting.store(true);
    runner.decode_step();
    counting.store(false);
  }
  return allocations.load();
}

TEST_P(WarmForward, DecodeStepsAllocateNothing) {
  ModelOptions options;
  options.quantize_group = GetParam().quantize_group;
  const std::unique_ptr<Model> model =
      Model::load(test::fixtures_dir() + "/" + GetParam().fixture, options);
  EXPECT_EQ(decode_allocations(*model), 0) << "allocations in 32 decode steps of 4 sequences";
}

// A mixture of experts (Qwen2-MoE: router, grouped experts, shared expert), F32 experts run one
// by one and W4A8 ones grouped.
TEST(WarmForwardMoe, DecodeStepsAllocateNothing) {
  test::ScratchDir scratch;
  SynthOptions o = synth_preset("tiny-qwen2-moe");
  o.dtype = Dtype::F32;
  o.output_dir = scratch.file("moe");
  write_synthetic_model(o);
  for (const std::optional<int64_t> group :
       {std::optional<int64_t>(), std::optional<int64_t>(32)}) {
    ModelOptions options;
    options.quantize_group = group;
    const std::unique_ptr<Model> model = Model::load(o.output_dir, options);
    EXPECT_EQ(decode_allocations(*model), 0) << (group ? "W4A8" : "F32");
  }
}

// The counter sees what it should: a test that cannot fail would prove nothing.
TEST(AllocationCounter, CountsAnAllocation) {
  allocations.store(0);
  counting.store(true);
  auto* p = new std::string(64, 'x');
  counting.store(false);
  delete p;
  EXPECT_GE(allocations.load(), 2);  // the string and its characters
}

INSTANTIATE_TEST_SUITE_P(Stories260K, WarmForward,
                         ::testing::Values(AllocCase{"F32", "stories260K-hf", std::nullopt},
                                           AllocCase{"W4A8G32", "stories260K-hf", 32},
                                           AllocCase{"W4A8Channel", "stories260K-hf", 0},
                                           AllocCase{"W4A16", "stories260K-hf-w4a16-ct",
                                                     std::nullopt}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace dq4
