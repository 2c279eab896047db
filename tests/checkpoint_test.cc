// Checkpoint::open_dir: single-file and sharded directories, and the errors that name the index,
// shard or tensor at fault.

#include "dq4/io/checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "dq4/kernels/error.h"
#include "expect_error.h"
#include "fixtures.h"
#include "safetensors_writer.h"

namespace dq4::test {
namespace {

TestTensor i32_tensor(const std::string& name, std::vector<int32_t> values) {
  std::vector<uint8_t> data(values.size() * 4);
  std::memcpy(data.data(), values.data(), data.size());
  return {name, "I32", {static_cast<int64_t>(values.size())}, data};
}

// Two shards and an index naming "a" and "b" in shard 1 and "c" in shard 2.
void write_sharded(const ScratchDir& dir) {
  write_safetensors(dir.file("model-00001-of-00002.safetensors"),
                    {i32_tensor("a", {1, 2}), i32_tensor("b", {3})});
  write_safetensors(dir.file("model-00002-of-00002.safetensors"), {i32_tensor("c", {4, 5, 6})});
  write_file(dir.file("model.safetensors.index.json"),
             R"({"metadata":{"total_size":24},"weight_map":{
      "a":"model-00001-of-00002.safetensors","b":"model-00001-of-00002.safetensors",
      "c":"model-00002-of-00002.safetensors"}})");
}

std::vector<int32_t> values(const TensorView& t) {
  const auto span = t.as<int32_t>();
  return {span.begin(), span.end()};
}

TEST(Checkpoint, SingleFileFixture) {
  const std::string dir = fixtures_dir() + "/stories260K-hf";
  const auto checkpoint = Checkpoint::open_dir(dir);
  EXPECT_EQ(checkpoint.files().size(), 1u);
  EXPECT_EQ(checkpoint.names().size(), 47u);
  EXPECT_EQ(checkpoint.tensor("model.layers.2.input_layernorm.weight").shape,
            (std::vector<int64_t>{64}));
  EXPECT_EQ(checkpoint.tensor("model.layers.2.mlp.gate_proj.weight").shape,
            (std::vector<int64_t>{172, 64}));
  EXPECT_EQ(checkpoint.find("lm_head.weight"), nullptr);
  expect_error([&] { (void)checkpoint.tensor("lm_head.weight"); },
               {"no tensor named \"lm_head.weight\"", dir});
}

TEST(Checkpoint, Sharded) {
  ScratchDir dir;
  write_sharded(dir);
  // A tensor in a shard but not in the index is not part of the checkpoint.
  write_safetensors(dir.file("model-00002-of-00002.safetensors"),
                    {i32_tensor("c", {4, 5, 6}), i32_tensor("stray", {0})});
  const auto checkpoint = Checkpoint::open_dir(dir.path());
  EXPECT_EQ(checkpoint.files().size(), 2u);
  EXPECT_EQ(checkpoint.names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(values(checkpoint.tensor("a")), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(values(checkpoint.tensor("b")), (std::vector<int32_t>{3}));
  EXPECT_EQ(values(checkpoint.tensor("c")), (std::vector<int32_t>{4, 5, 6}));
  EXPECT_EQ(checkpoint.tensor("c").file, dir.file("model-00002-of-00002.safetensors"));
  EXPECT_EQ(checkpoint.find("stray"), nullptr);

  const Checkpoint copy = checkpoint;  // views stay valid in copies
  EXPECT_EQ(values(copy.tensor("c")), (std::vector<int32_t>{4, 5, 6}));
}

// What a loader never looked up is what it left unused: a release of a tensor's pages, or a
// lookup of a name the checkpoint lacks, reads nothing.
TEST(Checkpoint, UnreadIsWhatFindAndTensorNeverReturned) {
  ScratchDir dir;
  write_sharded(dir);
  const auto checkpoint = Checkpoint::open_dir(dir.path());
  EXPECT_EQ(checkpoint.unread(), (std::vector<std::string>{"a", "b", "c"}));
  (void)checkpoint.tensor("b");
  checkpoint.release_pages("c");
  EXPECT_EQ(checkpoint.find("absent"), nullptr);
  EXPECT_TRUE(checkpoint.has_prefix("a"));
  EXPECT_EQ(checkpoint.names().size(), 3u);
  EXPECT_EQ(checkpoint.unread(), (std::vector<std::string>{"a", "c"}));
  const Checkpoint copy = checkpoint;  // copies share the record
  EXPECT_NE(copy.find("c"), nullptr);
  EXPECT_EQ(checkpoint.unread(), (std::vector<std::string>{"a"}));
}

TEST(Checkpoint, MissingShard) {
  ScratchDir dir;
  write_sharded(dir);
  std::filesystem::remove(dir.file("model-00002-of-00002.safetensors"));
  expect_error([&] { Checkpoint::open_dir(dir.path()); },
               {dir.file("model.safetensors.index.json"), "shard model-00002-of-00002.safetensors",
                "tensor \"c\"", "does not exist"});
}

TEST(Checkpoint, TensorMissingFromItsShard) {
  ScratchDir dir;
  write_sharded(dir);
  write_safetensors(dir.file("model-00001-of-00002.safetensors"), {i32_tensor("a", {1, 2})});
  expect_error([&] { Checkpoint::open_dir(dir.path()); },
               {dir.file("model.safetensors.index.json"), "tensor \"b\"",
                dir.file("model-00001-of-00002.safetensors") + " does not hold it"});
}

TEST(Checkpoint, BadShardFileNamesTheShard) {
  ScratchDir dir;
  write_sharded(dir);
  write_file(dir.file("model-00002-of-00002.safetensors"), "short");
  expect_error(
      [&] { Checkpoint::open_dir(dir.path()); },
      {dir.file("model-00002-of-00002.safetensors"), "too short for the 8-byte header length"});
}

TEST(Checkpoint, BadIndex) {
  ScratchDir dir;
  write_sharded(dir);
  const std::string index = dir.file("model.safetensors.index.json");
  write_file(index, R"({"weight_map":)");
  expect_error([&] { Checkpoint::open_dir(dir.path()); }, {index, "not valid JSON"});
  write_file(index, R"([])");
  expect_error([&] { Checkpoint::open_dir(dir.path()); }, {index, "not a JSON object"});
  write_file(index, R"({"metadata":{}})");
  expect_error([&] { Checkpoint::open_dir(dir.path()); }, {index, "missing field weight_map"});
  write_file(index, R"({"weight_map":[]})");
  expect_error([&] { Checkpoint::open_dir(dir.path()); }, {index, "weight_map is not an object"});
  write_file(index, R"({"weight_map":{"a":3}})");
  expect_error([&] { Checkpoint::open_dir(dir.path()); },
               {index, "weight_map[\"a\"] is not a string"});
  write_file(index, R"({"weight_map":{"a":"../model-00001-of-00002.safetensors"}})");
  expect_error([&] { Checkpoint::open_dir(dir.path()); },
               {index, "weight_map[\"a\"]", "is not a file inside"});
  write_file(index, R"({"weight_map":{"a":"/etc/passwd"}})");
  expect_error([&] { Checkpoint::open_dir(dir.path()); },
               {index, "weight_map[\"a\"]", "is not a file inside"});
}

TEST(Checkpoint, NotACheckpoint) {
  ScratchDir dir;
  expect_error([&] { Checkpoint::open_dir(dir.path()); },
               {dir.path(), "neither model.safetensors nor model.safetensors.index.json"});
  expect_error([&] { Checkpoint::open_dir(dir.file("absent")); },
               {dir.file("absent"), "is not a directory"});
}

}  // namespace
}  // namespace dq4::test
