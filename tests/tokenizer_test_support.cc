#include "tokenizer_test_support.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

namespace dq4::test {

const std::vector<std::string>& fixture_tokenizer_names() {
  static const std::vector<std::string> kNames = {"tokenizer-llama2",  "tokenizer-llama3",
                                                  "tokenizer-mistral", "tokenizer-qwen3",
                                                  "tokenizer-gpt2",    "stories260K-hf"};
  return kNames;
}

std::string fixture_tokenizer_dir(const std::string& name) {
  const char* dir = std::getenv("DQ4_FIXTURES");
  if (dir == nullptr) ADD_FAILURE() << "DQ4_FIXTURES is not set (point it at shared/fixtures)";
  return std::string(dir ? dir : "DQ4_FIXTURES-is-not-set") + "/" + name;
}

const Tokenizer& fixture_tokenizer(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Tokenizer>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = loaded[name];
  if (!slot)
    slot = std::make_unique<Tokenizer>(Tokenizer::from_directory(fixture_tokenizer_dir(name)));
  return *slot;
}

std::string read_test_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) ADD_FAILURE() << "cannot read " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace dq4::test
