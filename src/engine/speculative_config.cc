// SpeculativeConfig: validation, names, and parsing of vLLM's JSON shape and benchmarks' specs.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "dq4/engine/speculation.h"
#include "dq4/kernels/error.h"

namespace dq4 {

namespace {

constexpr int64_t kMaxDrafts = 16;  // rows a sequence adds to a step at most

int64_t parse_int(const std::string& field, const std::string& text) {
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size())
    throw Error("speculate: " + field + " must be an integer, got '" + text + "'");
  return value;
}

double parse_double(const std::string& field, const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size())
    throw Error("speculate: " + field + " must be a number, got '" + text + "'");
  return value;
}

}  // namespace

void SpeculativeConfig::validate() const {
  if (num_speculative_tokens < 0 || num_speculative_tokens > kMaxDrafts)
    throw Error("num_speculative_tokens: must be in [0, " + std::to_string(kMaxDrafts) + "], got " +
                std::to_string(num_speculative_tokens));
  if (method == Method::draft_model) {
    if (model.empty()) throw Error("model: the draft model's directory is missing");
  } else if (method == Method::ngram) {
    if (prompt_lookup_min < 1)
      throw Error("prompt_lookup_min: must be >= 1, got " + std::to_string(prompt_lookup_min));
    if (prompt_lookup_max < prompt_lookup_min)
      throw Error("prompt_lookup_max: must be >= prompt_lookup_min (" +
                  std::to_string(prompt_lookup_min) + "), got " +
                  std::to_string(prompt_lookup_max));
  } else {
    if (!(replay_accept >= 0 && replay_accept <= 1))
      throw Error("accept: must be in [0, 1], got " + std::to_string(replay_accept));
  }
}

std::string SpeculativeConfig::name() const {
  const std::string k = std::to_string(num_speculative_tokens);
  const std::string acceptance_name =
      acceptance == Acceptance::match ? "" : ",acceptance=rejection_sampler";
  if (method == Method::ngram)
    return "ngram:k=" + k + ",min=" + std::to_string(prompt_lookup_min) +
           ",max=" + std::to_string(prompt_lookup_max) + acceptance_name;
  if (method == Method::draft_model) return "draft:" + model + ",k=" + k + acceptance_name;
  char accept[32];
  std::snprintf(accept, sizeof accept, "%g", replay_accept);
  return "replay:k=" + k + ",accept=" + accept + acceptance_name;
}

namespace {

// "match" or "rejection_sampler" (vLLM's name; "rejection" too), as `field` of `where`.
SpeculativeConfig::Acceptance parse_acceptance(const std::string& where, const std::string& field,
                                               const std::string& text) {
  if (text == "match") return SpeculativeConfig::Acceptance::match;
  if (text == "rejection_sampler" || text == "rejection")
    return SpeculativeConfig::Acceptance::rejection_sampler;
  throw Error(where + ": " + field + " '" + text +
              "' is not supported (match or rejection_sampler)");
}

}  // namespace

SpeculativeConfig parse_speculative_config(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("--speculative-config: not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw Error("--speculative-config: must be a JSON object");
  const auto integer = [&](const char* field) -> std::optional<int64_t> {
    if (!j.contains(field)) return std::nullopt;
    if (!j[field].is_number_integer())
      throw Error(std::string("--speculative-config: ") + field + " must be an integer");
    return j[field].get<int64_t>();
  };
  for (const auto& [key, value] : j.items())
    if (key != "method" && key != "model" && key != "num_speculative_tokens" &&
        key != "prompt_lookup_min" && key != "prompt_lookup_max" && key != "acceptance_method")
      throw Error("--speculative-config: unknown field '" + key + "'");
  SpeculativeConfig c;
  if (j.contains("model") && (!j["model"].is_string() || j["model"].get<std::string>().empty()))
    throw Error("--speculative-config: model must be the draft model's directory");
  // As in vLLM, a model alone means a draft model.
  if (j.contains("model") && !j.contains("method")) j["method"] = "draft_model";
  if (!j.contains("method") || !j["method"].is_string())
    throw Error("--speculative-config: method must be a string (\"ngram\" or \"draft_model\")");
  const std::string method = j["method"].get<std::string>();
  if (method == "draft_model") {
    if (!j.contains("model"))
      throw Error("--speculative-config: method draft_model needs model (its directory)");
    c.method = SpeculativeConfig::Method::draft_model;
    c.model = j["model"].get<std::string>();
  } else if (method != "ngram") {
    throw Error("--speculative-config: method '" + method +
                "' is not supported (\"ngram\" or \"draft_model\")");
  } else if (j.contains("model")) {
    throw Error("--speculative-config: model is for method draft_model, not ngram");
  }
  const auto k = integer("num_speculative_tokens");
  if (!k) throw Error("--speculative-config: num_speculative_tokens is required");
  c.num_speculative_tokens = *k;
  if (j.contains("acceptance_method")) {
    if (!j["acceptance_method"].is_string())
      throw Error("--speculative-config: acceptance_method must be a string");
    c.acceptance = parse_acceptance("--speculative-config", "acceptance_method",
                                    j["acceptance_method"].get<std::string>());
  }
  const auto lo = integer("prompt_lookup_min"), hi = integer("prompt_lookup_max");
  if ((lo || hi) && c.method != SpeculativeConfig::Method::ngram)
    throw Error(std::string("--speculative-config: ") +
                (lo ? "prompt_lookup_min" : "prompt_lookup_max") + " is for method ngram");
  if (lo || hi) {
    c.prompt_lookup_min = lo.value_or(*hi);
    c.prompt_lookup_max = hi.value_or(*lo);
  }
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(std::string("--speculative-config: ") + e.what());
  }
  return c;
}

SpeculativeConfig parse_speculate_spec(const std::string& spec) {
  SpeculativeConfig c;
  const size_t colon = spec.find(':');
  const std::string method = spec.substr(0, colon);
  std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  std::error_code ec;
  if (method == "draft" ||
      (method != "ngram" && method != "replay" && std::filesystem::is_directory(spec, ec))) {
    c.method = SpeculativeConfig::Method::draft_model;
    c.num_speculative_tokens = 4;
    if (method == "draft") {
      // The directory runs to the first ",k=" or ",acceptance=" (a comma may be part of its name).
      const size_t keys = std::min(rest.find(",k="), rest.find(",acceptance="));
      c.model = rest.substr(0, keys);
      rest = keys == std::string::npos ? "" : rest.substr(keys + 1);
    } else {
      c.model = spec;
      rest.clear();
    }
  } else if (method == "ngram") {
    c.method = SpeculativeConfig::Method::ngram;
    c.num_speculative_tokens = 4;
    c.prompt_lookup_min = 2;
    c.prompt_lookup_max = 4;
  } else if (method == "replay") {
    c.method = SpeculativeConfig::Method::replay;
    c.num_speculative_tokens = 4;
  } else {
    throw Error("speculate: '" + spec +
                "' is neither a method (ngram, replay:k=K,accept=A, draft:DIR) nor a model "
                "directory");
  }
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string item = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string::npos)
      throw Error("speculate: '" + item + "' in '" + spec + "' is not key=value");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "acceptance") {
      c.acceptance = parse_acceptance("speculate '" + spec + "'", key, value);
    } else if (key == "k") {
      c.num_speculative_tokens = parse_int(key, value);
    } else if (key == "accept" && c.method == SpeculativeConfig::Method::replay) {
      c.replay_accept = parse_double(key, value);
    } else if (key == "min" && c.method == SpeculativeConfig::Method::ngram) {
      c.prompt_lookup_min = parse_int(key, value);
    } else if (key == "max" && c.method == SpeculativeConfig::Method::ngram) {
      c.prompt_lookup_max = parse_int(key, value);
    } else {
      throw Error("speculate: unknown key '" + key + "' in '" + spec + "'");
    }
  }
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error("speculate '" + spec + "': " + e.what());
  }
  return c;
}

}  // namespace dq4
