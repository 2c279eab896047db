#pragma once
// compressed-tensors' "quantization_config" (config.json) resolved to one scheme per linear
// module (shared/docs/checkpoint-format-and-math.md §2.5-2.7):
//   W4A8   int4 symmetric weights (channel or group), int8 dynamic per-token activations
//   W4A16  int4 symmetric weights, activations not quantized
//   dense  not targeted by any config group, or ignored
// Anything else a config can say (zero points, g_idx, other bit widths, float formats, static
// activations, transforms, a KV-cache scheme) is refused with an error naming the module and the
// field, never run with the wrong math.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dq4 {

enum class LinearKind { dense, w4a8, w4a16 };
// How a module's weights are stored. Dense modules keep their float `weight`.
enum class WeightFormat { dense, int_quantized, pack_quantized };

std::string_view linear_kind_name(LinearKind kind);        // "dense", "W4A8", "W4A16"
std::string_view weight_format_name(WeightFormat format);  // "dense", "int-quantized", ...

struct LinearScheme {
  LinearKind kind = LinearKind::dense;
  WeightFormat format = WeightFormat::dense;
  int64_t group_size = 0;    // int4 kinds: 0 = one scale per output channel, else G along K
  std::string config_group;  // the config group whose targets matched ("" when dense)
  std::string reason;        // dense only: why ("no quantization_config", "ignored by 'lm_head'")
};

class QuantizationConfig {
 public:
  // Parses config.json text (its "quantization_config", or the legacy "compression_config"; a
  // file with neither is an unquantized model). `file` names the file in messages. Throws
  // dq4::Error naming the file and the JSON path for malformed or unsupported configs.
  static QuantizationConfig parse(std::string_view config_json, const std::string& file);
  static QuantizationConfig read(const std::string& model_dir);  // model_dir/config.json

  bool quantized() const { return !groups_.empty(); }
  const std::string& file() const { return file_; }

  // The scheme of the linear module `module_name` (class "Linear"). Throws dq4::Error naming
  // the module and the config field when its scheme is one dq4 does not run.
  LinearScheme resolve(std::string_view module_name) const;

  // The parsed groups (for `dq4 inspect` and tests).
  struct Group {
    std::string name;
    std::vector<std::string> targets;  // exact names, "re:" regexes or class names
    LinearScheme scheme;               // kind, format, group size (config_group = name)
    std::string unsupported;           // non-empty: why modules of this group cannot run
  };
  const std::vector<Group>& groups() const { return groups_; }
  const std::vector<std::string>& ignore() const { return ignore_; }

 private:
  std::string file_;
  std::vector<Group> groups_;
  std::vector<std::string> ignore_;
};

}  // namespace dq4
