// The llama.cpp reference run through node, and the prompts of the differential tests.

#include "llamacpp_reference.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace dq4::test {

using Json = nlohmann::json;

std::vector<int32_t> prompt_ids(int64_t count, int64_t vocab, uint32_t seed) {
  std::vector<int32_t> ids;
  uint32_t s = seed;
  for (int64_t i = 0; i < count; ++i) {
    s = s * 1664525u + 1013904223u;
    ids.push_back(static_cast<int32_t>((s >> 8) % static_cast<uint32_t>(vocab)));
  }
  return ids;
}

std::vector<float> softmax(const float* logits, int64_t n) {
  const float max = *std::max_element(logits, logits + n);
  std::vector<float> p(logits, logits + n);
  double sum = 0;
  for (float& v : p) sum += v = std::exp(v - max);
  for (float& v : p) v = static_cast<float>(v / sum);
  return p;
}

std::vector<Generation> run_llamacpp(const std::string& gguf, const std::vector<Prompt>& prompts) {
  const std::string js_dir = DQ4_JS_DIR;
  if (!std::filesystem::exists(js_dir + "/node_modules/node-llama-cpp/package.json")) {
    ADD_FAILURE() << js_dir
                  << "/node_modules/node-llama-cpp is missing: run scripts/install-deps.sh";
    return {};
  }
  Json request = {{"model", gguf}, {"threads", 1}, {"top", 8}, {"prompts", Json::array()}};
  for (const Prompt& p : prompts) request["prompts"].push_back({{"ids", p.ids}, {"n", p.n}});
  const std::string in = gguf + ".request.json", out = gguf + ".result.json";
  std::ofstream(in) << request.dump();
  const std::string command =
      "node " + js_dir + "/llamacpp_reference.mjs < '" + in + "' > '" + out + "'";
  const int status = std::system(command.c_str());
  if (status != 0) {
    const bool no_node = WIFEXITED(status) && WEXITSTATUS(status) == 127;
    ADD_FAILURE() << "'" << command << "' failed"
                  << (no_node ? ": node is not on PATH; run scripts/install-deps.sh" : "");
    return {};
  }
  std::ifstream result(out);
  std::stringstream text;
  text << result.rdbuf();
  const Json results = Json::parse(text.str());
  std::vector<Generation> generations;
  for (const Json& r : results.at("results")) {
    Generation g;
    g.ids = r["ids"].get<std::vector<int32_t>>();
    for (const Json& step : r["top"]) {
      g.top.emplace_back();
      for (const Json& entry : step)
        g.top.back().emplace_back(entry[0].get<int32_t>(), entry[1].get<double>());
    }
    generations.push_back(std::move(g));
  }
  return generations;
}

std::string preset_test_name(const testing::TestParamInfo<const char*>& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

}  // namespace dq4::test
