// compressed-tensors quantization_config -> one LinearScheme per linear module.

#include "dq4/io/quant_config.h"

#include <algorithm>
#include <array>
#include <optional>

#include "dq4/io/match_regex.h"
#include "dq4/io/text_file.h"
#include "dq4/kernels/error.h"
#include "json_fields.h"
#include "strict_json.h"

namespace dq4 {
namespace {

using io::JsonFields;

// QuantizationArgs, the fields a loader needs (shared/docs/checkpoint-format-and-math.md §2.5).
struct QuantArgs {
  int64_t num_bits = 8;
  std::string type = "int";
  bool symmetric = true;
  std::string strategy;  // resolved: tensor, channel, group, block, token, tensor_group, ...
  std::optional<int64_t> group_size;
  bool dynamic = false;
  std::string actorder;  // "", "group", "weight"
};

QuantArgs parse_args(const JsonFields& f) {
  QuantArgs a;
  a.num_bits = f.integer("num_bits").value_or(8);
  a.type = f.string("type").value_or("int");
  a.symmetric = f.boolean("symmetric").value_or(true);
  a.group_size = f.integer("group_size");
  if (const nlohmann::json* d = f.find("dynamic")) {
    // "local" is NVFP4's tensor_group mode: dynamic, and not a format dq4 runs anyway.
    if (d->is_boolean())
      a.dynamic = d->get<bool>();
    else if (d->is_string() && d->get<std::string>() == "local")
      a.dynamic = true;
    else
      f.fail("dynamic", "expected true, false or \"local\", got " + io::json_snippet(*d));
  }
  if (const nlohmann::json* o = f.find("actorder")) {
    if (o->is_boolean()) {
      a.actorder = o->get<bool>() ? "group" : "";
    } else if (o->is_string()) {
      const std::string v = o->get<std::string>();
      if (v == "group" || v == "dynamic")
        a.actorder = "group";
      else if (v == "weight" || v == "static")
        a.actorder = "weight";
      else
        f.fail("actorder", "unknown value '" + v + "'");
    } else {
      f.fail("actorder", "expected a string, got " + io::json_snippet(*o));
    }
  }
  // Inferred exactly as compressed-tensors does when the strategy is null.
  if (auto s = f.string("strategy")) {
    a.strategy = *s;
  } else if (!a.group_size) {
    a.strategy = "tensor";
  } else if (*a.group_size == -1) {
    a.strategy = "channel";
  } else if (*a.group_size > 0) {
    a.strategy = "group";
  } else {
    f.fail("group_size", "must be -1, null or positive, got " + std::to_string(*a.group_size));
  }
  return a;
}

// The presets compressed-tensors expands when a config group maps a preset name to targets.
std::optional<nlohmann::json> preset_scheme(const std::string& name) {
  const nlohmann::json int4_weights = {{"num_bits", 4},     {"type", "int"},
                                       {"symmetric", true}, {"strategy", "group"},
                                       {"group_size", 128}, {"dynamic", false}};
  const nlohmann::json int8_tokens = {{"num_bits", 8},
                                      {"type", "int"},
                                      {"symmetric", true},
                                      {"strategy", "token"},
                                      {"dynamic", true}};
  if (name == "W4A16") return nlohmann::json{{"weights", int4_weights}};
  if (name == "W4A8")
    return nlohmann::json{{"weights", int4_weights}, {"input_activations", int8_tokens}};
  if (name == "W4A16_ASYM") {
    nlohmann::json w = int4_weights;
    w["symmetric"] = false;
    return nlohmann::json{{"weights", w}};
  }
  if (name == "W8A16" || name == "W8A8" || name == "INT8") {
    nlohmann::json w = int4_weights;
    w["num_bits"] = 8;
    w["strategy"] = "channel";
    w["group_size"] = nullptr;
    return nlohmann::json{{"weights", w}};
  }
  constexpr std::array<std::string_view, 9> kFloatPresets = {"FP8",      "FP8_DYNAMIC", "FP8_BLOCK",
                                                             "NVFP4",    "NVFP4A16",    "MXFP4",
                                                             "MXFP4A16", "MXFP8",       "W4AFP8"};
  for (std::string_view p : kFloatPresets)
    if (name == p) return nlohmann::json{{"weights", {{"num_bits", 8}, {"type", "float"}}}};
  return std::nullopt;
}

std::optional<WeightFormat> weight_format(const std::string& name) {
  // naive-quantized stores the same int8 `weight` tensor as int-quantized.
  if (name == "int-quantized" || name == "naive-quantized") return WeightFormat::int_quantized;
  if (name == "pack-quantized") return WeightFormat::pack_quantized;
  return std::nullopt;
}

// Decides the scheme of one group; anything dq4 cannot run goes to `unsupported`, naming the field.
void resolve_group(const JsonFields& g, const std::optional<std::string>& global_format,
                   QuantizationConfig::Group& group) {
  LinearScheme& s = group.scheme;
  s.config_group = group.name;
  auto unsupported = [&](const std::string& field, const std::string& why) {
    if (group.unsupported.empty()) group.unsupported = g.path() + "." + field + ": " + why;
  };
  if (g.has("output_activations")) unsupported("output_activations", "output quantization");
  if (!g.has("weights")) {
    unsupported("weights", "null (activation-only quantization)");
    return;
  }
  const QuantArgs w = parse_args(g.object("weights"));
  if (w.type != "int") unsupported("weights.type", "'" + w.type + "' weights (dq4 runs int4)");
  if (w.num_bits != 4)
    unsupported("weights.num_bits", std::to_string(w.num_bits) + "-bit weights (dq4 runs int4)");
  if (!w.symmetric)
    unsupported("weights.symmetric", "false: zero points (dq4 runs symmetric int4)");
  if (w.dynamic) unsupported("weights.dynamic", "true (weights must be static)");
  if (w.actorder == "group") unsupported("weights.actorder", "'group' (g_idx reordering)");
  if (w.strategy == "channel") {
    s.group_size = 0;
  } else if (w.strategy == "group") {
    const int64_t size = w.group_size.value_or(0);
    if (size <= 0 || size % 32 != 0)
      unsupported("weights.group_size",
                  std::to_string(size) + " (dq4 runs groups that are multiples of 32)");
    s.group_size = size;
  } else {
    unsupported("weights.strategy", "'" + w.strategy + "' (dq4 runs channel or group)");
  }

  if (g.has("input_activations")) {
    const JsonFields input = g.object("input_activations");
    const QuantArgs a = parse_args(input);
    // Symmetric or not, dq4 quantizes activations per token asymmetrically, as KleidiAI and
    // vLLM's W4A8 path do.
    if (a.type != "int") unsupported("input_activations.type", "'" + a.type + "' activations");
    if (a.num_bits != 8)
      unsupported("input_activations.num_bits", std::to_string(a.num_bits) + "-bit activations");
    if (a.strategy != "token")
      unsupported("input_activations.strategy", "'" + a.strategy + "' (dq4 runs per token)");
    if (!a.dynamic) unsupported("input_activations.dynamic", "false (static activation scales)");
    s.kind = LinearKind::w4a8;
  } else {
    s.kind = LinearKind::w4a16;
  }

  std::optional<std::string> format = g.string("format");
  if (!format || *format == "mixed-precision") format = global_format;
  if (format && *format == "mixed-precision") {
    unsupported("format", "missing (the global format is mixed-precision)");
    return;
  }
  if (!format) {
    // No format anywhere: compressed-tensors infers int-quantized for schemes with activations
    // and pack-quantized for weight-only int4.
    s.format =
        s.kind == LinearKind::w4a8 ? WeightFormat::int_quantized : WeightFormat::pack_quantized;
  } else if (auto f = weight_format(*format)) {
    s.format = *f;
  } else {
    unsupported("format", "'" + *format + "' (dq4 reads int-quantized and pack-quantized)");
  }
}

std::vector<std::string> string_list(const JsonFields& f, std::string_view key) {
  std::vector<std::string> out;
  const nlohmann::json* list = f.find(key);
  if (list == nullptr) return out;
  if (!list->is_array()) f.fail(key, "expected a list of strings, got " + io::json_snippet(*list));
  for (const auto& item : *list) {
    if (!item.is_string()) f.fail(key, "expected strings, got " + io::json_snippet(item));
    out.push_back(item.get<std::string>());
  }
  return out;
}

bool is_empty_object(const nlohmann::json* value) {
  return value == nullptr || (value->is_object() && value->empty());
}

constexpr std::string_view kRegexPrefix = "re:";

bool is_regex(const std::string& target) { return target.starts_with(kRegexPrefix); }

bool regex_matches(const std::string& target, std::string_view module, const std::string& where) {
  return io::MatchRegex(target.substr(kRegexPrefix.size()), where).matches_start(module);
}

}  // namespace

std::string_view linear_kind_name(LinearKind kind) {
  switch (kind) {
    case LinearKind::dense:
      return "dense";
    case LinearKind::w4a8:
      return "W4A8";
    case LinearKind::w4a16:
      return "W4A16";
  }
  return "?";
}

std::string_view weight_format_name(WeightFormat format) {
  switch (format) {
    case WeightFormat::dense:
      return "dense";
    case WeightFormat::int_quantized:
      return "int-quantized";
    case WeightFormat::pack_quantized:
      return "pack-quantized";
  }
  return "?";
}

QuantizationConfig QuantizationConfig::parse(std::string_view config_json,
                                             const std::string& file) {
  const nlohmann::json json = io::parse_strict_json(config_json, file);
  const JsonFields root(json, file, "");
  QuantizationConfig config;
  config.file_ = file;
  // Early-2024 checkpoints used "compression_config" for the same object.
  const char* key = root.has("quantization_config")  ? "quantization_config"
                    : root.has("compression_config") ? "compression_config"
                                                     : nullptr;
  if (key == nullptr) return config;
  const JsonFields q = root.object(key);

  if (auto method = q.string("quant_method");
      method && *method != "compressed-tensors" && *method != "sparseml")
    q.fail("quant_method", "'" + *method + "' is not supported (dq4 reads compressed-tensors)");
  if (auto status = q.string("quantization_status"); status && *status != "compressed")
    q.fail("quantization_status",
           "'" + *status + "': dq4 reads compressed checkpoints only (status \"compressed\")");
  if (!is_empty_object(q.find("transform_config")))
    q.fail("transform_config", "transforms (rotations) are not supported");
  if (q.has("kv_cache_scheme")) q.fail("kv_cache_scheme", "KV-cache quantization is not supported");
  if (const nlohmann::json* sparsity = q.find("sparsity_config"); !is_empty_object(sparsity)) {
    const JsonFields sp = q.object("sparsity_config");
    if (auto f = sp.string("format"); f && *f != "dense")
      sp.fail("format", "'" + *f + "': sparse checkpoints are not supported");
  }
  const std::optional<std::string> global_format = q.string("format");
  config.ignore_ = string_list(q, "ignore");
  for (const std::string& target : config.ignore_)
    if (is_regex(target)) regex_matches(target, "", q.where("ignore"));  // validates the regex

  const JsonFields groups = q.object("config_groups");
  const nlohmann::json& groups_json = *q.find("config_groups");
  for (auto it = groups_json.begin(); it != groups_json.end(); ++it) {
    Group group;
    group.name = it.key();
    if (it.value().is_array()) {
      // A preset name mapped to its targets, e.g. "W4A16": ["Linear"].
      group.targets = string_list(groups, it.key());
      const std::optional<nlohmann::json> preset = preset_scheme(it.key());
      if (!preset) groups.fail(it.key(), "unknown preset scheme name");
      resolve_group(JsonFields(*preset, file, groups.path() + "." + it.key()), global_format,
                    group);
    } else {
      const JsonFields g = groups.object(it.key());
      group.targets = string_list(g, "targets");
      if (group.targets.empty()) g.fail("targets", "missing or empty");
      resolve_group(g, global_format, group);
    }
    for (const std::string& target : group.targets)
      if (is_regex(target)) regex_matches(target, "", groups.where(it.key() + ".targets"));
    config.groups_.push_back(std::move(group));
  }
  if (config.groups_.empty()) q.fail("config_groups", "no groups");
  return config;
}

QuantizationConfig QuantizationConfig::read(const std::string& model_dir) {
  const std::string path = model_dir + "/config.json";
  return parse(io::read_text_file(path, "quantization config"), path);
}

LinearScheme QuantizationConfig::resolve(std::string_view module) const {
  LinearScheme dense;
  if (groups_.empty()) {
    dense.reason = "no quantization_config";
    return dense;
  }
  for (const std::string& entry : ignore_) {
    if (is_regex(entry) ? regex_matches(entry, module, file_ + ": quantization_config.ignore")
                        : entry == module) {
      dense.reason = "ignored by '" + entry + "'";
      return dense;
    }
  }
  // compressed-tensors' precedence: an exact name, then a regex, then the class name.
  enum Precedence { kNone, kClass, kRegex, kName };
  const Group* best = nullptr;
  Precedence best_precedence = kNone;
  bool tie = false;
  for (const Group& group : groups_) {
    Precedence p = kNone;
    for (const std::string& target : group.targets) {
      Precedence t = kNone;
      if (target == module)
        t = kName;
      else if (is_regex(target) &&
               regex_matches(target, module, file_ + ": config_groups." + group.name))
        t = kRegex;
      else if (target == "Linear")
        t = kClass;
      p = std::max(p, t);
    }
    if (p == kNone) continue;
    if (p > best_precedence) {
      best = &group;
      best_precedence = p;
      tie = false;
    } else if (p == best_precedence) {
      tie = true;
    }
  }
  const std::string name(module);
  if (best == nullptr) {
    dense.reason = "not targeted";
    return dense;
  }
  if (tie)
    throw Error(file_ + ": module '" + name +
                "' is targeted equally by several config_groups (ambiguous scheme)");
  if (!best->unsupported.empty())
    throw Error(file_ + ": module '" + name + "': " + best->unsupported);
  return best->scheme;
}

}  // namespace dq4
