// The model end to end on the stories260K fixtures: greedy ids and logits against the references,
// and the batched forward against one sequence at a time, bit for bit.

#include "dq4/model/model.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "dq4/engine/session.h"
#include "dq4/kernels/thread_pool.h"
#include "fixtures.h"

namespace dq4 {
namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return nlohmann::json::parse(in);
}

std::vector<int32_t> ids(const nlohmann::json& j) { return j.get<std::vector<int32_t>>(); }

int32_t argmax(std::span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

// Greedy generation of `steps` tokens after `prompt`, one token at a time.
std::vector<int32_t> greedy(Model& model, const std::vector<int32_t>& prompt, int64_t steps) {
  Session session(model, static_cast<int64_t>(prompt.size()) + steps);
  std::span<const float> logits = session.feed(prompt);
  std::vector<int32_t> out;
  for (int64_t i = 0; i < steps; ++i) {
    const int32_t next = argmax(logits);
    out.push_back(next);
    if (i + 1 < steps) logits = session.feed(std::span(&next, 1));
  }
  return out;
}

void expect_logits_near(std::span<const float> got, const nlohmann::json& want, double tol,
                        const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i].get<double>()));
  EXPECT_LE(worst, tol) << what;
}

struct ReferenceCase {
  const char* fixture;
  double logit_tolerance;
};

class ReferenceGeneration : public ::testing::TestWithParam<ReferenceCase> {};

TEST_P(ReferenceGeneration, GreedyIdsAndLogitsMatch) {
  const std::string dir = test::fixtures_dir() + "/" + GetParam().fixture;
  const nlohmann::json ref = read_json(dir + "/reference_generation.json");
  std::unique_ptr<Model> model = Model::load(dir);
  for (const nlohmann::json& run : ref["runs"]) {
    const std::string name = run["name"];
    const std::vector<int32_t> prompt = ids(run["prompt_ids"]);
    const std::vector<int32_t> want = ids(run["generated_ids"]);
    EXPECT_EQ(greedy(*model, prompt, static_cast<int64_t>(want.size())), want) << name;
    if (!run.contains("logits")) continue;
    // logits[k]: after the prompt (from_bos: logits_input_tokens) plus k generated tokens.
    std::vector<int32_t> input =
        run.contains("logits_input_tokens") ? ids(run["logits_input_tokens"]) : prompt;
    const size_t rows = run["logits"].size();
    if (!run.contains("logits_input_tokens"))
      input.insert(input.end(), want.begin(), want.begin() + static_cast<ptrdiff_t>(rows - 1));
    Session session(*model, static_cast<int64_t>(input.size()));
    const std::span<const float> all = session.feed_all(input);
    const size_t vocab = static_cast<size_t>(model->vocab_size());
    const size_t first = input.size() - rows;
    for (size_t k = 0; k < rows; ++k)
      expect_logits_near(all.subspan((first + k) * vocab, vocab), run["logits"][k],
                         GetParam().logit_tolerance, name + " logits row " + std::to_string(k));
  }
}

INSTANTIATE_TEST_SUITE_P(Stories260K, ReferenceGeneration,
                         ::testing::Values(ReferenceCase{"stories260K-hf", 1e-4},
                                           ReferenceCase{"stories260K-hf-w4a16-ct", 1e-4}),
                         [](const auto& info) {
                           return std::string(info.param.fixture).find("w4a16") != std::string::npos
                                      ? std::string("W4A16")
                                      : std::string("F32");
                         });

// The logits of each sequence run alone, prompt then decode tokens, one forward per call.
struct Script {
  std::vector<int32_t> prompt;
  std::vector<int32_t> decode;  // fed one at a time after the prompt
};

std::vector<Script> scripts() {
  return {{{1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421}, {395, 317, 426}},
          {{1, 13, 438, 310}, {439, 419, 357, 336, 432}},
          {{1,   426, 338, 401, 396, 267, 337, 410, 408, 419, 292, 411,
            322, 265, 282, 295, 433, 426, 385, 328, 432, 358, 394},
           {261, 370}},
          {{1}, {403, 407, 261, 378, 432, 383}}};
}

// Row-by-row logits of every script, run alone with the prompt in one chunk.
std::vector<std::vector<float>> run_alone(Model& model, ThreadPool& pool, attention::KvType kv) {
  std::vector<std::vector<float>> out;
  const size_t vocab = static_cast<size_t>(model.vocab_size());
  for (const Script& s : scripts()) {
    std::vector<int32_t> all = s.prompt;
    all.insert(all.end(), s.decode.begin(), s.decode.end());
    Session session(model, static_cast<int64_t>(all.size()), kv, 512, &pool);
    std::vector<float> rows;
    const std::span<const float> p = session.feed_all(s.prompt);
    rows.insert(rows.end(), p.begin(), p.end());
    for (int32_t t : s.decode) {
      const std::span<const float> d = session.feed_all(std::span(&t, 1));
      rows.insert(rows.end(), d.begin(), d.begin() + static_cast<ptrdiff_t>(vocab));
    }
    out.push_back(std::move(rows));
  }
  return out;
}

// All scripts at once in one cache: prompts split into chunks of `chunk`, later steps mixing one
// sequence's prefill chunk with the others' decode tokens.
std::vector<std::vector<float>> run_batched(Model& model, ThreadPool& pool, int64_t chunk,
                                            attention::KvType kv) {
  const std::vector<Script> all = scripts();
  constexpr int64_t kBlock = 4;
  std::vector<std::vector<int32_t>> tokens, tables;
  int32_t next_block = 0;
  for (const Script& s : all) {
    std::vector<int32_t> t = s.prompt;
    t.insert(t.end(), s.decode.begin(), s.decode.end());
    // Blocks of different sequences interleaved, so block tables are not contiguous.
    std::vector<int32_t> table;
    for (size_t i = 0; i < (t.size() + kBlock - 1) / kBlock; ++i) table.push_back(next_block++);
    tokens.push_back(std::move(t));
    tables.push_back(std::move(table));
  }
  for (auto& table : tables) std::reverse(table.begin(), table.end());
  KvCache cache(model.kv_shape(next_block, kBlock, kv));
  const size_t vocab = static_cast<size_t>(model.vocab_size());
  std::vector<std::vector<float>> out(all.size());
  std::vector<size_t> done(all.size(), 0);
  std::vector<float> logits;
  for (;;) {
    std::vector<SequenceInput> batch;
    std::vector<size_t> which;
    for (size_t i = 0; i < all.size(); ++i) {
      if (done[i] == tokens[i].size()) continue;
      const size_t prompt_left =
          done[i] < all[i].prompt.size() ? all[i].prompt.size() - done[i] : 0;
      const size_t n =
          prompt_left > 0 ? std::min<size_t>(prompt_left, static_cast<size_t>(chunk)) : 1;
      SequenceInput s;
      s.tokens = std::span(tokens[i]).subspan(done[i], n);
      s.start = static_cast<int64_t>(done[i]);
      s.block_table = tables[i];
      s.logits = SequenceInput::Logits::all;
      batch.push_back(s);
      which.push_back(i);
    }
    if (batch.empty()) break;
    logits.resize(static_cast<size_t>(Model::logit_rows(batch)) * vocab);
    model.forward(batch, cache, logits.data(), &pool);
    size_t row = 0;
    for (size_t b = 0; b < batch.size(); ++b) {
      const size_t n = batch[b].tokens.size();
      auto& dst = out[which[b]];
      dst.insert(dst.end(), logits.begin() + static_cast<ptrdiff_t>(row * vocab),
                 logits.begin() + static_cast<ptrdiff_t>((row + n) * vocab));
      row += n;
      done[which[b]] += n;
    }
  }
  return out;
}

void expect_bitwise_equal(const std::vector<std::vector<float>>& a,
                          const std::vector<std::vector<float>>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].size(), b[i].size()) << what << " sequence " << i;
    EXPECT_EQ(std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)), 0)
        << what << " sequence " << i;
  }
}

struct BatchCase {
  const char* fixture;
  std::optional<int64_t> quantize_group;
  attention::KvType kv = attention::KvType::f32;
};

class BatchedForward : public ::testing::TestWithParam<BatchCase> {};

TEST_P(BatchedForward, EqualsOneSequenceAtATimeBitForBit) {
  ModelOptions options;
  options.quantize_group = GetParam().quantize_group;
  std::unique_ptr<Model> model =
      Model::load(test::fixtures_dir() + "/" + GetParam().fixture, options);
  const attention::KvType kv = GetParam().kv;
  ThreadPool one(1);
  const auto reference = run_alone(*model, one, kv);
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    expect_bitwise_equal(run_alone(*model, pool, kv), reference,
                         "alone, " + std::to_string(threads) + " threads");
    for (int64_t chunk : {1, 3, 7, 512})
      expect_bitwise_equal(
          run_batched(*model, pool, chunk, kv), reference,
          "batched, chunk " + std::to_string(chunk) + ", " + std::to_string(threads) + " threads");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Stories260K, BatchedForward,
    ::testing::Values(BatchCase{"stories260K-hf", std::nullopt}, BatchCase{"stories260K-hf", 32},
                      BatchCase{"stories260K-hf", 0},
                      BatchCase{"stories260K-hf-w4a16-ct", std::nullopt},
                      BatchCase{"stories260K-hf", 32, attention::KvType::bf16}),
    [](const auto& info) {
      const BatchCase& c = info.param;
      std::string name =
          std::string(c.fixture).find("w4a16") != std::string::npos ? "W4A16" : "F32";
      if (c.quantize_group)
        name = *c.quantize_group == 0 ? "W4A8Channel" : "W4A8G" + std::to_string(*c.quantize_group);
      return c.kv == attention::KvType::bf16 ? name + "KvBf16" : name;
    });

// BF16 keys and values round each stored value once: the logits move, but only a little.
TEST(KvCacheBf16, StaysCloseToF32) {
  std::unique_ptr<Model> model = Model::load(test::fixtures_dir() + "/stories260K-hf");
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315};
  Session f32(*model, 64, attention::KvType::f32), bf16(*model, 64, attention::KvType::bf16);
  const std::span<const float> a = f32.feed_all(prompt);
  const std::vector<float> want(a.begin(), a.end());
  const std::span<const float> b = bf16.feed_all(prompt);
  double worst = 0, largest = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(want[i] - b[i])));
    largest = std::max(largest, static_cast<double>(std::abs(want[i])));
  }
  EXPECT_GT(worst, 0.0);  // the cache really holds bf16
  EXPECT_LT(worst, 0.02 * largest);
}

}  // namespace
}  // namespace dq4
