#pragma once
// The stories260K fixture (../shared/fixtures/stories260K-hf) as several suites use it.

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "dq4/tokenizer/tokenizer.h"
#include "fixtures.h"

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

}  // namespace dq4::test
