// What the model refuses, and how: every error names the file, tensor or field at fault.

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "dq4/engine/session.h"
#include "dq4/model/model.h"
#include "expect_error.h"
#include "fixtures.h"
#include "stories_fixture.h"

namespace dq4 {
namespace {

using test::expect_error;

using test::stories_config;

using ModifiedModel = test::StoriesWithConfig;

TEST(ModelErrors, BadFilesAndShapes) {
  expect_error([] { Model::load("/nonexistent/model"); }, {"/nonexistent/model", "config.json"});
  nlohmann::json c = stories_config();
  c["hidden_size"] = 80;
  c["head_dim"] = 10;
  {
    ModifiedModel m(c);
    expect_error([&] { Model::load(m.dir.path()); }, {"model.embed_tokens.weight", "[512, 80]"});
  }
  c = stories_config();
  c["tie_word_embeddings"] = false;
  {
    ModifiedModel m(c);
    expect_error([&] { Model::load(m.dir.path()); }, {"lm_head"});
  }
  c = stories_config();
  c["attention_bias"] = true;
  {
    ModifiedModel m(c);
    expect_error([&] { Model::load(m.dir.path()); }, {"q_proj", "bias"});
  }
}

TEST(ModelErrors, BadBatches) {
  std::unique_ptr<Model> model = Model::load(test::fixtures_dir() + "/stories260K-hf");
  Session session(*model, 8);
  const std::vector<int32_t> outside = {1, 512};
  expect_error([&] { session.feed(outside); }, {"token id 512", "vocabulary"});
  const std::vector<int32_t> long_prompt(9, 1);
  expect_error([&] { session.feed(long_prompt); }, {"9 tokens", "context of 8"});
  KvCache cache(model->kv_shape(1, 4));
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5};
  const std::vector<int32_t> table = {0};
  SequenceInput seq{tokens, 0, table, SequenceInput::Logits::last};
  std::vector<float> logits(512);
  expect_error([&] { model->forward(std::span(&seq, 1), cache, logits.data()); },
               {"block table", "too short"});
  const std::vector<int32_t> bad_table = {0, 7};
  seq.block_table = bad_table;
  expect_error([&] { model->forward(std::span(&seq, 1), cache, logits.data()); },
               {"block 7", "outside the cache"});
  seq.start = 510;
  seq.block_table = table;
  expect_error([&] { model->forward(std::span(&seq, 1), cache, logits.data()); },
               {"exceed the context of 512"});
}

}  // namespace
}  // namespace dq4
