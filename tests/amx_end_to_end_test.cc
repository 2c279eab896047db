// The W4A8 layers of a model and of the serving engine on the AMX tile kernel: the real unit
// (`amx`) where this CPU and its OS allow it, else the tile model (`amx_model`), so that the same
// tests run, and must pass, on every x86 host. On the real unit batches of 16 rows and more run
// on the tiles and single rows on the VNNI kernel, so "batched equals alone" also compares the
// tile code with another kernel through the whole model (the tile model runs every row count on
// its tiles).
//
// Its own executable: main() starts a pool of more threads than this machine has cores before
// the process asks the OS for tile permission (cpu_features() asks), and chooses the kernel
// through DQ4_ISA before anything packs weights. Tile state must then survive preemption on
// threads that existed before the permission, and on threads started after it.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dq4/engine/engine.h"
#include "dq4/kernels/cpu_features.h"
#include "dq4/kernels/thread_pool.h"
#include "dq4/kernels/w4a8.h"
#include "dq4/model/model.h"
#include "stories_fixture.h"

namespace dq4 {
namespace {

ThreadPool* early_pool = nullptr;  // started before the tile permission was asked for
const char* tile_kernel = nullptr;

Model& w4a8_model() {
  static std::unique_ptr<Model> model = [] {
    ModelOptions options;
    options.quantize_group = 32;
    return Model::load(test::stories_dir(), options, early_pool);
  }();
  return *model;
}

struct Outputs {
  std::map<uint64_t, std::vector<TokenId>> tokens;  // filled on the stepping thread
};

// Runs `requests` in one engine on `pool` until all are done; the tokens of each.
std::vector<std::vector<TokenId>> serve(const std::vector<Request>& requests, ThreadPool& pool,
                                        const EngineOptions& options,
                                        uint64_t* preemptions = nullptr) {
  Engine engine(w4a8_model(), test::stories_tokenizer(), options, &pool);
  auto outputs = std::make_shared<Outputs>();
  std::vector<uint64_t> ids;
  for (const Request& r : requests)
    ids.push_back(engine.add_request(r, [outputs](RequestOutput&& out) {
      for (ChoiceDelta& d : out.choices) {
        auto& t = outputs->tokens[out.request_id];
        t.insert(t.end(), d.token_ids.begin(), d.token_ids.end());
      }
    }));
  while (engine.has_unfinished()) {
    if (!engine.step()) break;
  }
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
  if (preemptions != nullptr) *preemptions = engine.stats().preemptions;
  std::vector<std::vector<TokenId>> out;
  for (uint64_t id : ids) out.push_back(outputs->tokens[id]);
  return out;
}

// Greedy requests with prompts of 17 to 48 random token ids (each prompt fills a tile's rows).
std::vector<Request> requests(int count) {
  std::mt19937 rng(11);
  const auto vocab = static_cast<TokenId>(w4a8_model().vocab_size());
  std::vector<Request> out;
  for (int i = 0; i < count; ++i) {
    Request r;
    const int length = std::uniform_int_distribution<int>(17, 48)(rng);
    for (int t = 0; t < length; ++t)
      r.prompt.push_back(std::uniform_int_distribution<TokenId>(3, vocab - 1)(rng));
    r.sampling.temperature = 0;
    r.ignore_eos = true;
    r.max_tokens = 12;
    out.push_back(r);
  }
  return out;
}

// Each request alone, prompt and then one row per decode step, on one thread.
std::vector<std::vector<TokenId>> alone(const std::vector<Request>& requests) {
  ThreadPool one(1);
  EngineOptions o;
  o.kv_blocks = 16;
  o.enable_prefix_caching = false;
  std::vector<std::vector<TokenId>> out;
  for (const Request& r : requests) out.push_back(serve({r}, one, o).front());
  return out;
}

TEST(AmxEndToEnd, EveryW4A8LayerRunsTheTileKernel) {
  const std::string variant(w4a8::family().variant(*w4a8::family().find(tile_kernel)));
  int w4a8_lines = 0;
  for (const std::string& line : w4a8_model().describe()) {
    if (line.find("W4A8") == std::string::npos) continue;
    ++w4a8_lines;
    EXPECT_NE(line.find(variant), std::string::npos) << line;
  }
  EXPECT_EQ(w4a8_lines, 4);  // q+k+v, o, gate+up, down
}

// Many sequences at once (decode steps of 24 rows, prompts chunked beside them) on the pool that
// predates the permission, six threads on however few cores: each gives what it gives alone.
TEST(AmxEndToEnd, ManySequencesOnThreadsOlderThanThePermissionEqualEachAlone) {
  const std::vector<Request> batch = requests(24);
  const std::vector<std::vector<TokenId>> want = alone(batch);
  EngineOptions o;
  o.kv_blocks = 256;
  o.max_num_seqs = 32;
  o.max_num_batched_tokens = 64;
  for (int round = 0; round < 2; ++round) {
    const std::vector<std::vector<TokenId>> got = serve(batch, *early_pool, o);
    for (size_t i = 0; i < batch.size(); ++i)
      EXPECT_EQ(got[i], want[i]) << "request " << i << ", round " << round;
  }
}

// A KV pool too small for all of them: sequences are preempted and recomputed, on a pool started
// after the permission, with more threads than cores.
TEST(AmxEndToEnd, PreemptedSequencesOnNewThreadsEqualEachAlone) {
  const std::vector<Request> batch = requests(16);
  const std::vector<std::vector<TokenId>> want = alone(batch);
  ThreadPool pool(5);
  EngineOptions o;
  o.kv_blocks = 24;
  o.max_model_len = 64;
  o.max_num_seqs = 16;
  o.max_num_batched_tokens = 96;
  uint64_t preemptions = 0;
  const std::vector<std::vector<TokenId>> got = serve(batch, pool, o, &preemptions);
  EXPECT_GT(preemptions, 0u);
  for (size_t i = 0; i < batch.size(); ++i) EXPECT_EQ(got[i], want[i]) << "request " << i;
}

}  // namespace
}  // namespace dq4

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Before anything calls cpu_features(): these threads predate the tile permission.
  dq4::ThreadPool early(6);
  dq4::early_pool = &early;
  const dq4::w4a8::Kernel* amx = dq4::w4a8::family().find("amx");
  dq4::tile_kernel = amx != nullptr && dq4::w4a8::family().supported(*amx) ? "amx" : "amx_model";
  setenv("DQ4_ISA", (std::string("w4a8:") + dq4::tile_kernel).c_str(), 1);
  std::fprintf(stderr, "W4A8 on %s (amx: %s)\n", dq4::tile_kernel,
               dq4::cpu_features().amx_status.c_str());
  return RUN_ALL_TESTS();
}
