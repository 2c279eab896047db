#pragma once
// The stories260K fixture (../shared/fixtures/stories260K-hf) as several suites use it.

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "dq4/tokenizer/tokenizer.h"
#include "fixtures.h"
#include "safetensors_writer.h"

namespace dq4::test {

inline std::string stories_dir() { return fixtures_dir() + "/stories260K-hf"; }

inline nlohmann::json stories_config() {
  std::ifstream in(stories_dir() + "/config.json");
  return nlohmann::json::parse(in);
}

inline const Tokenizer& stories_tokenizer() {
  static const Tokenizer tokenizer = Tokenizer::from_directory(stories_dir());
  return tokenizer;
}

// A model directory with the stories260K weights and the given config.json.
struct StoriesWithConfig {
  ScratchDir dir;
  explicit StoriesWithConfig(const nlohmann::json& config) {
    std::filesystem::copy_file(stories_dir() + "/model.safetensors", dir.file("model.safetensors"));
    write_file(dir.file("config.json"), config.dump());
  }
};

}  // namespace dq4::test
