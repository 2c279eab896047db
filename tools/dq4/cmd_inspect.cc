// dq4 inspect: what a model directory holds, as dq4 reads it — the architecture, every linear
// module with its resolved scheme and encoding, and the bytes spent per parameter.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "dq4/io/checkpoint.h"
#include "dq4/io/linear_tensors.h"
#include "dq4/io/model_config.h"
#include "dq4/io/quant_config.h"
#include "dq4/kernels/error.h"
#include "dq4/layers/linear.h"
#include "dq4/model/architecture.h"
#include "load_options.h"

namespace dq4::cli {
namespace {

struct ModuleRow {
  LinearModule module;
  LinearScheme scheme;
  std::string weight_dtype;  // dense weights: their dtype
  size_t bytes = 0;
  std::string error;  // non-empty: why dq4 cannot load this module
};

// The rope as transformers names its type, with what sets the context it runs.
std::string rope_text(const Architecture& a) {
  const RopeScaling& r = a.config.rope_scaling;
  const auto number = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return std::string(text);
  };
  switch (a.rope) {
    case RopeVariant::plain:
      return "default";
    case RopeVariant::linear:
      return "linear, factor " + number(r.factor);
    case RopeVariant::llama3:
      return "llama3, factor " + number(r.factor);
    case RopeVariant::longrope:
      return "longrope, long factors past " + std::to_string(a.longrope_original_context);
    case RopeVariant::yarn:
      return "yarn, factor " + number(a.yarn.factor) + " over " +
             std::to_string(a.yarn.original_context);
  }
  return "?";
}

std::string scheme_text(const ModuleRow& r) {
  if (!r.error.empty()) return "UNSUPPORTED";
  if (r.scheme.kind == LinearKind::dense) return "dense " + r.weight_dtype;
  return std::string(linear_kind_name(r.scheme.kind));
}

std::string group_text(const LinearScheme& s) {
  if (s.kind == LinearKind::dense) return "-";
  return s.group_size == 0 ? "channel" : "g" + std::to_string(s.group_size);
}

double per_param(size_t bytes, int64_t params) {
  return params == 0 ? 0.0 : static_cast<double>(bytes) / static_cast<double>(params);
}

// Loads every layer through Linear and prints what runs; the numbers say what packing costs.
void print_loaded_layers(const Architecture& arch, const QuantizationConfig& quant,
                         const Checkpoint& checkpoint, const LinearOptions& options) {
  std::printf("\nloaded layers:\n");
  const auto start = std::chrono::steady_clock::now();
  size_t packed_bytes = 0;
  std::vector<std::vector<LinearModule>> groups = arch.linear_groups();
  for (const auto& group : groups) {
    const Linear linear = Linear::load(checkpoint, quant, group, options);
    packed_bytes += linear.bytes();
    std::printf("  %5lld x %-5lld %10zu B  %s\n", static_cast<long long>(linear.out_features()),
                static_cast<long long>(linear.in_features()), linear.bytes(),
                linear.description().c_str());
  }
  if (!arch.head) {
    const Linear head = Linear::from_dense_tensor(checkpoint.tensor(arch.embedding), options);
    packed_bytes += head.bytes();
    std::printf(
        "  %5lld x %-5lld %10zu B  %s (tied head)\n", static_cast<long long>(head.out_features()),
        static_cast<long long>(head.in_features()), head.bytes(), head.description().c_str());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("packed: %zu bytes in %.3f s\n", packed_bytes, seconds);
}

}  // namespace

int run_inspect(int argc, char** argv, int first) {
  Args args("inspect",
            "Prints what dq4 reads in a Hugging Face model directory: the architecture, every\n"
            "linear module with its resolved scheme (W4A8, W4A16 or dense) and weight format\n"
            "(int-quantized, pack-quantized, dense), and the bytes spent per parameter.\n"
            "Exits with status 1 when some module cannot be loaded (the reason is printed).");
  args.positional("DIR", "the model directory (config.json + safetensors)");
  args.option("json", "", "print one JSON object instead of the table");
  args.option("load", "",
              "also load every layer as a model would (grouped by shared input: q+k+v, o, "
              "gate+up, down, head) and print what each runs, its packed bytes and the load time");
  declare_load_options(args);
  if (!args.parse(argc, argv, first)) return 0;
  const LinearOptions load_options = linear_options(args);
  const std::string dir = args.value("DIR");

  const ModelConfig config = ModelConfig::read(dir);
  const Checkpoint checkpoint = Checkpoint::open_dir(dir);
  const Architecture arch = Architecture::read(config, checkpoint);
  const ModelConfig& model = arch.config;
  const QuantizationConfig quant = QuantizationConfig::read(dir);

  std::vector<ModuleRow> rows;
  std::set<std::string> linear_tensor_names;
  int64_t linear_params = 0;
  size_t linear_bytes = 0;
  int unsupported = 0;
  for (const LinearModule& m : arch.linear_modules()) {
    ModuleRow row;
    row.module = m;
    // A stacked expert: its index after the module's name.
    if (m.expert >= 0) row.module.name += "[" + std::to_string(m.expert) + "]";
    try {
      row.scheme = quant.resolve(m.name);
      const LinearTensors t = find_linear_tensors(checkpoint, m, row.scheme);
      check_linear_shape(t, m);
      if (t.weight != nullptr) row.weight_dtype = std::string(dtype_name(t.weight->dtype));
      row.bytes = t.bytes();
    } catch (const Error& e) {
      row.error = e.what();
      ++unsupported;
    }
    for (const char* suffix : {".weight", ".weight_packed", ".weight_shape", ".weight_scale",
                               ".weight_zero_point", ".weight_g_idx", ".bias"})
      linear_tensor_names.insert(m.name + suffix);
    linear_params += m.out_features * m.in_features;
    linear_bytes += row.bytes;
    rows.push_back(std::move(row));
  }
  size_t total_bytes = 0;
  int64_t total_params = linear_params;
  for (const std::string& name : checkpoint.names()) {
    const TensorView& t = checkpoint.tensor(name);
    total_bytes += t.bytes;
    if (linear_tensor_names.count(name) == 0) total_params += t.numel();
  }

  if (args.flag("json")) {
    nlohmann::json out = {{"dir", dir},
                          {"architecture", model.architecture},
                          {"model_type", model.model_type},
                          {"hidden_size", model.hidden_size},
                          {"intermediate_size", model.intermediate_size},
                          {"num_hidden_layers", model.num_hidden_layers},
                          {"num_attention_heads", model.num_attention_heads},
                          {"num_key_value_heads", model.num_key_value_heads},
                          {"head_dim", model.head_dim},
                          {"vocab_size", model.vocab_size},
                          {"tie_word_embeddings", model.tie_word_embeddings},
                          {"context_length", arch.context_length},
                          {"rope", rope_text(arch)},
                          {"quantized", quant.quantized()},
                          {"linear_params", linear_params},
                          {"linear_bytes", linear_bytes},
                          {"linear_bytes_per_param", per_param(linear_bytes, linear_params)},
                          {"total_params", total_params},
                          {"total_bytes", total_bytes},
                          {"bytes_per_param", per_param(total_bytes, total_params)},
                          {"modules", nlohmann::json::array()}};
    for (const ModuleRow& r : rows) {
      nlohmann::json m = {{"name", r.module.name},
                          {"out_features", r.module.out_features},
                          {"in_features", r.module.in_features}};
      if (!r.error.empty()) {
        m["error"] = r.error;
      } else {
        m["scheme"] = linear_kind_name(r.scheme.kind);
        m["format"] = weight_format_name(r.scheme.format);
        m["group_size"] = r.scheme.group_size;
        if (r.scheme.kind == LinearKind::dense) m["reason"] = r.scheme.reason;
        if (!r.weight_dtype.empty()) m["weight_dtype"] = r.weight_dtype;
        m["bytes"] = r.bytes;
        m["bytes_per_param"] = per_param(r.bytes, r.module.out_features * r.module.in_features);
      }
      out["modules"].push_back(m);
    }
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("model: %s\n", dir.c_str());
    std::printf(
        "  %s (%s): hidden %lld, intermediate %lld, %lld layers, %lld heads (%lld kv, "
        "head_dim %lld), vocab %lld%s%s%s\n",
        model.architecture.c_str(), model.model_type.c_str(),
        static_cast<long long>(model.hidden_size), static_cast<long long>(model.intermediate_size),
        static_cast<long long>(model.num_hidden_layers),
        static_cast<long long>(model.num_attention_heads),
        static_cast<long long>(model.num_key_value_heads), static_cast<long long>(model.head_dim),
        static_cast<long long>(model.vocab_size),
        model.tie_word_embeddings ? ", lm_head tied to the embeddings" : "",
        model.torch_dtype.empty() ? "" : ", dtype ", model.torch_dtype.c_str());
    std::printf("  context %lld tokens, rope %s\n", static_cast<long long>(arch.context_length),
                rope_text(arch).c_str());
    if (!quant.quantized()) {
      std::printf("quantization: none (no quantization_config)\n");
    } else {
      std::printf("quantization: compressed-tensors, %zu config group(s)\n", quant.groups().size());
      for (const auto& g : quant.groups()) {
        std::string targets;
        for (const auto& t : g.targets) targets += (targets.empty() ? "" : ", ") + t;
        std::printf("  %s -> [%s]: %s\n", g.name.c_str(), targets.c_str(),
                    !g.unsupported.empty() ? ("unsupported: " + g.unsupported).c_str()
                                           : (std::string(linear_kind_name(g.scheme.kind)) + " " +
                                              std::string(weight_format_name(g.scheme.format)) +
                                              " " + group_text(g.scheme))
                                                 .c_str());
      }
      std::string ignore;
      for (const auto& i : quant.ignore()) ignore += (ignore.empty() ? "" : ", ") + i;
      std::printf("  ignore: [%s]\n", ignore.c_str());
    }
    // The name column as wide as the longest name (a mixture's expert modules run past 36).
    int width = 36;
    for (const ModuleRow& r : rows) width = std::max(width, static_cast<int>(r.module.name.size()));
    std::printf("\n%-*s %13s  %-11s %-15s %-8s %12s %8s\n", width, "linear module", "N x K",
                "scheme", "format", "group", "bytes", "B/param");
    for (const ModuleRow& r : rows) {
      const std::string shape =
          std::to_string(r.module.out_features) + "x" + std::to_string(r.module.in_features);
      if (!r.error.empty()) {
        std::printf("%-*s %13s  %-11s %s\n", width, r.module.name.c_str(), shape.c_str(),
                    "UNSUPPORTED", r.error.c_str());
        continue;
      }
      std::printf("%-*s %13s  %-11s %-15s %-8s %12zu %8.4f\n", width, r.module.name.c_str(),
                  shape.c_str(), scheme_text(r).c_str(),
                  std::string(weight_format_name(r.scheme.format)).c_str(),
                  group_text(r.scheme).c_str(), r.bytes,
                  per_param(r.bytes, r.module.out_features * r.module.in_features));
    }
    std::printf("\nlinear modules: %lld parameters in %zu bytes (%.4f bytes/param)\n",
                static_cast<long long>(linear_params), linear_bytes,
                per_param(linear_bytes, linear_params));
    std::printf("whole checkpoint: %lld parameters in %zu bytes (%.4f bytes/param)\n",
                static_cast<long long>(total_params), total_bytes,
                per_param(total_bytes, total_params));
  }
  if (args.flag("load") && unsupported == 0)
    print_loaded_layers(arch, quant, checkpoint, load_options);
  if (unsupported > 0) {
    std::fprintf(stderr, "dq4 inspect: %d linear module(s) cannot be loaded (see above)\n",
                 unsupported);
    return 1;
  }
  return 0;
}

}  // namespace dq4::cli
