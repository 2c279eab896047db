// A decoder layer's work goes through the thread pool in a few jobs: the norm fused with the
// activations' quantization, the residual adds in the matmuls' epilogues, the per-row work of
// every sequence in one job (ThreadPool::jobs() counts them).

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "dq4/kernels/thread_pool.h"
#include "dq4/model/model.h"
#include "fixtures.h"
#include "model_batch.h"

namespace dq4 {
namespace {

// The most pool jobs one decoder layer may take; the head and the embeddings share the budget.
constexpr uint64_t kJobsPerLayer = 6;

struct PassCase {
  const char* name;
  const char* fixture;
  std::optional<int64_t> quantize_group;
};

class PoolJobs : public ::testing::TestWithParam<PassCase> {};

TEST_P(PoolJobs, AtMostSixPerLayerAtPrefillAndDecode) {
  ModelOptions options;
  options.quantize_group = GetParam().quantize_group;
  const std::unique_ptr<Model> model =
      Model::load(test::fixtures_dir() + "/" + GetParam().fixture, options);
  const uint64_t budget = kJobsPerLayer * static_cast<uint64_t>(model->config().num_hidden_layers);
  ThreadPool pool(3);
  test::BatchRunner runner(*model, 5, 9, 4, pool);

  uint64_t before = pool.jobs();
  runner.prefill();
  EXPECT_LE(pool.jobs() - before, budget) << "prefill of 5 sequences";
  for (int step = 0; step < 4; ++step) {
    before = pool.jobs();
    runner.decode_step();
    EXPECT_LE(pool.jobs() - before, budget) << "decode step " << step << " of 5 sequences";
  }
}

INSTANTIATE_TEST_SUITE_P(Stories260K, PoolJobs,
                         ::testing::Values(PassCase{"F32", "stories260K-hf", std::nullopt},
                                           PassCase{"W4A8", "stories260K-hf", 32},
                                           PassCase{"W4A16", "stories260K-hf-w4a16-ct",
                                                    std::nullopt}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace dq4
