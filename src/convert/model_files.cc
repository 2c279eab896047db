#include "model_files.h"

#include <array>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "dq4/kernels/error.h"

namespace dq4::quant {

namespace fs = std::filesystem;

int copy_tokenizer_files(const std::string& from, const std::string& to) {
  static constexpr std::array<std::string_view, 10> kFiles = {"tokenizer.json",
                                                              "tokenizer_config.json",
                                                              "special_tokens_map.json",
                                                              "tokenizer.model",
                                                              "generation_config.json",
                                                              "added_tokens.json",
                                                              "vocab.json",
                                                              "merges.txt",
                                                              "chat_template.jinja",
                                                              "chat_template.json"};
  int copied = 0;
  for (std::string_view name : kFiles) {
    const fs::path source = fs::path(from) / name;
    std::error_code ec;
    if (!fs::is_regular_file(source, ec)) continue;
    fs::copy_file(source, fs::path(to) / name, fs::copy_options::overwrite_existing, ec);
    if (ec) throw Error("cannot copy " + source.string() + " to " + to + ": " + ec.message());
    ++copied;
  }
  return copied;
}

uint64_t directory_bytes(const std::string& dir) {
  uint64_t total = 0;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file()) total += entry.file_size();
  return total;
}

void write_config_json(const nlohmann::ordered_json& config, const std::string& dir) {
  const std::string path = dir + "/config.json";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << config.dump(2) << "\n";
  out.close();
  if (!out) throw Error("cannot write " + path);
}

}  // namespace dq4::quant
