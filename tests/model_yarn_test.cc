// YaRN through the model: its frequencies and attention factor reach the forward pass, and the
// context it extends is the one the model runs.

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>
#include <vector>

#include "dq4/engine/session.h"
#include "dq4/model/model.h"
#include "expect_error.h"
#include "stories_fixture.h"

namespace dq4 {
namespace {

using test::StoriesWithConfig;

// stories260K (head_dim 8, rope_theta 1e4, 512 positions) with yarn of the given settings.
nlohmann::json yarn_config(const nlohmann::json& settings) {
  nlohmann::json c = test::stories_config();
  c["rope_scaling"] = {{"rope_type", "yarn"}, {"original_max_position_embeddings", 512}};
  c["rope_scaling"].update(settings);
  return c;
}

std::vector<float> logits_after(const std::string& dir, const std::vector<int32_t>& prompt) {
  const std::unique_ptr<Model> model = Model::load(dir);
  Session session(*model, static_cast<int64_t>(prompt.size()));
  const std::span<const float> logits = session.feed(prompt);
  return {logits.begin(), logits.end()};
}

std::vector<int32_t> prompt_of(int64_t n) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(1 + (i * 37) % 500);
  return ids;
}

TEST(Yarn, EveryFrequencyExtrapolatedAndNoAttentionFactorIsPlainRope) {
  // A ramp past the last frequency index (8 ln(512 / (2 pi 0.01)) / (2 ln 1e4) = 3.9, floored
  // to 3 of 0-3): every frequency as trained.
  const std::vector<int32_t> prompt = prompt_of(40);
  const std::vector<float> plain = logits_after(test::stories_dir(), prompt);
  const StoriesWithConfig same(yarn_config(
      {{"factor", 4.0}, {"beta_fast", 0.01}, {"beta_slow", 0.005}, {"attention_factor", 1.0}}));
  EXPECT_EQ(logits_after(same.dir.path(), prompt), plain);
  // The attention factor alone (1 + 0.1 ln 4) moves them.
  const StoriesWithConfig scaled(
      yarn_config({{"factor", 4.0}, {"beta_fast", 0.01}, {"beta_slow", 0.005}}));
  EXPECT_NE(logits_after(scaled.dir.path(), prompt), plain);
  // And the interpolated frequencies alone.
  const StoriesWithConfig interpolated(yarn_config({{"factor", 4.0}, {"attention_factor", 1.0}}));
  EXPECT_NE(logits_after(interpolated.dir.path(), prompt), plain);
}

TEST(Yarn, RunsTheExtendedContext) {
  const StoriesWithConfig m(yarn_config({{"factor", 2.0}}));
  const std::unique_ptr<Model> model = Model::load(m.dir.path());
  EXPECT_EQ(model->max_context(), 1024);
  Session session(*model, 1024);
  const std::span<const float> logits = session.feed(prompt_of(700));
  EXPECT_TRUE(std::all_of(logits.begin(), logits.end(), [](float v) { return std::isfinite(v); }));
  const std::vector<int32_t> more = prompt_of(325);
  test::expect_error([&] { session.feed(more); }, {"1025 tokens", "context of 1024"});
}

}  // namespace
}  // namespace dq4
