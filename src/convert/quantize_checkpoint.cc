// The streaming driver of `dq4 quantize`: plan every output tensor from the input's header, then
// write them in the safetensors library's order (larger elements first, then by name), quantizing
// one linear weight at a time. That order puts a module's scales and int4 values apart, so its
// scales are computed in a pass of their own (absolute maxima only) and its values in another.

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string_view>
#include <utility>

#include "ct_config.h"
#include "dq4/convert/quantize.h"
#include "dq4/io/checkpoint.h"
#include "dq4/io/match_regex.h"
#include "dq4/io/model_config.h"
#include "dq4/io/text_file.h"
#include "dq4/kernels/error.h"
#include "dq4/kernels/int4_codec.h"
#include "dq4/kernels/thread_pool.h"
#include "dq4/quant/rtn.h"
#include "model_files.h"
#include "staging_dir.h"

namespace dq4 {
namespace {

constexpr size_t kCopyChunkBytes = size_t{64} << 20;

// Checkpoint tensors are views of read-only file mappings, and every page touched counts in the
// process's RSS until unmapped. Dropping the pages of a tensor once it is written keeps the
// resident set (and the peak reported) at the working set; later reads fault them back in.
void release_pages(const uint8_t* data, size_t bytes) {
  if (bytes == 0) return;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes + page - 1) & ~(page - 1);
  ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);  // best effort
}

// The ignore list: exact module names or "re:" regexes matched at the start of the name.
class IgnoreList {
 public:
  explicit IgnoreList(const std::vector<std::string>& entries) {
    for (const std::string& entry : entries) {
      if (std::find(entries_.begin(), entries_.end(), entry) != entries_.end()) continue;
      entries_.push_back(entry);
      if (entry.rfind("re:", 0) == 0) regexes_.emplace_back(entry.substr(3), "quantize: --ignore");
    }
  }
  bool ignores(const std::string& module) const {
    if (std::find(entries_.begin(), entries_.end(), module) != entries_.end()) return true;
    for (const io::MatchRegex& re : regexes_)
      if (re.matches_start(module)) return true;
    return false;
  }
  const std::vector<std::string>& entries() const { return entries_; }

 private:
  std::vector<std::string> entries_;
  std::vector<io::MatchRegex> regexes_;
};

enum class Part { copy, values, packed, scale, shape };

struct PlannedTensor {
  TensorSpec spec;
  Part part = Part::copy;
  const TensorView* source = nullptr;  // the tensor copied, or the weight quantized
};

// One quantized module's output, computed when its first tensor is written.
struct ModuleOutput {
  const TensorView* weight = nullptr;
  bool has_values = false;
  RtnResult rtn;
  std::vector<int32_t> packed;
};

std::vector<int32_t> pack_rows(const RtnResult& r) {
  const int64_t words = (r.cols + 7) / 8;
  std::vector<int32_t> packed(static_cast<size_t>(r.rows * words));
  const int64_t rows_per_task =
      std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, r.cols));
  ThreadPool::global().run((r.rows + rows_per_task - 1) / rows_per_task, [&](int64_t task) {
    const int64_t begin = task * rows_per_task, end = std::min(r.rows, begin + rows_per_task);
    pack_int4_rows(r.values.data() + begin * r.cols, end - begin, r.cols,
                   packed.data() + begin * words);
  });
  return packed;
}

class Quantizer {
 public:
  explicit Quantizer(const QuantizeOptions& options) : options_(options) {}

  QuantizeReport run();

 private:
  void check_options() const;
  nlohmann::ordered_json read_config() const;
  std::vector<PlannedTensor> plan(const Checkpoint& checkpoint, const IgnoreList& ignore);
  void write_tensor(const PlannedTensor& t, CheckpointWriter& writer);
  const ModuleOutput& module_output(const TensorView* weight, bool need_values);

  const QuantizeOptions& options_;
  QuantizeReport report_;
  std::optional<ModuleOutput> cached_;
};

void Quantizer::check_options() const {
  if (options_.group_size < 0)
    throw Error("quantize: group size " + std::to_string(options_.group_size) + " is negative");
  if (options_.format != WeightFormat::int_quantized &&
      options_.format != WeightFormat::pack_quantized)
    throw Error("quantize: the weight format must be int-quantized or pack-quantized");
  if (options_.output_dir.empty()) throw Error("quantize: no output directory given");
}

nlohmann::ordered_json Quantizer::read_config() const {
  const std::string path = options_.input_dir + "/config.json";
  nlohmann::ordered_json config;
  try {
    config = nlohmann::ordered_json::parse(io::read_text_file(path, "quantize"));
  } catch (const nlohmann::json::exception& e) {
    throw Error("quantize: " + path + " is not valid JSON: " + e.what());
  }
  for (const char* key : {"quantization_config", "compression_config"})
    if (config.contains(key))
      throw Error("quantize: " + path + " already has a " + key +
                  "; dq4 quantizes unquantized (F32, BF16, F16) models");
  return config;
}

std::vector<PlannedTensor> Quantizer::plan(const Checkpoint& checkpoint, const IgnoreList& ignore) {
  if (options_.modules.empty())
    throw Error("quantize: no linear modules given for " + options_.input_dir);
  std::vector<const TensorView*> quantized;  // the weights to quantize
  for (const LinearModule& m : options_.modules) {
    if (m.expert > 0) continue;  // stacked experts: one tensor, planned with the first
    ++report_.linear_modules;
    const std::string name = m.name + ".weight";
    const TensorView* weight = checkpoint.find(name);
    if (weight == nullptr)
      throw Error("quantize: checkpoint " + options_.input_dir + " has no tensor \"" + name +
                  "\" (linear module " + m.name + " of config.json)");
    std::vector<int64_t> expected{m.out_features, m.in_features};
    if (m.expert == 0) expected.insert(expected.begin(), m.stacked_experts);
    if (weight->shape != expected) {
      TensorView shape;
      shape.shape = expected;
      throw Error("quantize: tensor \"" + name + "\" in " + weight->file + " has shape " +
                  weight->shape_string() + "; config.json gives " + shape.shape_string());
    }
    if (ignore.ignores(m.name)) continue;
    if (weight->dtype != Dtype::F32 && weight->dtype != Dtype::BF16 && weight->dtype != Dtype::F16)
      throw Error("quantize: tensor \"" + name + "\" in " + weight->file + " is " +
                  std::string(dtype_name(weight->dtype)) +
                  "; only F32, BF16 and F16 weights can be quantized");
    quantized.push_back(weight);
  }
  report_.quantized_modules = static_cast<int64_t>(quantized.size());

  std::vector<PlannedTensor> planned;
  for (const std::string& name : checkpoint.names()) {
    const TensorView* t = &checkpoint.tensor(name);
    if (std::find(quantized.begin(), quantized.end(), t) == quantized.end()) {
      planned.push_back({{t->name, t->dtype, t->shape}, Part::copy, t});
      continue;
    }
    // [N, K], or stacked experts' [experts, N, K]: quantized row by row alike.
    const std::string prefix = name.substr(0, name.size() - std::string_view("weight").size());
    const int64_t k = t->shape.back();
    const auto with_last = [&](int64_t last) {
      std::vector<int64_t> shape = t->shape;
      shape.back() = last;
      return shape;
    };
    planned.push_back(
        {{prefix + "weight_scale", t->dtype, with_last(rtn_groups(k, options_.group_size))},
         Part::scale,
         t});
    if (options_.format == WeightFormat::int_quantized) {
      planned.push_back({{prefix + "weight", Dtype::I8, t->shape}, Part::values, t});
    } else {
      planned.push_back(
          {{prefix + "weight_packed", Dtype::I32, with_last((k + 7) / 8)}, Part::packed, t});
      planned.push_back(
          {{prefix + "weight_shape", Dtype::I64, {static_cast<int64_t>(t->shape.size())}},
           Part::shape,
           t});
    }
  }
  std::sort(planned.begin(), planned.end(), [](const PlannedTensor& a, const PlannedTensor& b) {
    return safetensors_order(a.spec, b.spec);
  });
  return planned;
}

const ModuleOutput& Quantizer::module_output(const TensorView* weight, bool need_values) {
  if (cached_ && cached_->weight == weight && (cached_->has_values || !need_values))
    return *cached_;
  cached_.reset();  // free the previous module first: peak memory is one module's output
  ModuleOutput out;
  out.weight = weight;
  out.has_values = need_values;
  // Stacked experts' rows as one matrix: each row's scales are its own.
  TensorView rows = *weight;
  rows.shape = {weight->numel() / weight->shape.back(), weight->shape.back()};
  out.rtn =
      need_values ? rtn_quantize(rows, options_.group_size) : rtn_scales(rows, options_.group_size);
  release_pages(weight->data, weight->bytes);
  if (need_values && options_.format == WeightFormat::pack_quantized) {
    out.packed = pack_rows(out.rtn);
    out.rtn.values = {};
  }
  cached_ = std::move(out);
  return *cached_;
}

void Quantizer::write_tensor(const PlannedTensor& t, CheckpointWriter& writer) {
  if (t.part == Part::copy) {
    for (size_t offset = 0; offset < t.source->bytes; offset += kCopyChunkBytes) {
      const size_t bytes = std::min(kCopyChunkBytes, t.source->bytes - offset);
      writer.append(t.source->data + offset, bytes);
      release_pages(t.source->data + offset, bytes);
    }
    return;
  }
  if (t.part == Part::shape) {
    writer.append(t.source->shape.data(), t.source->shape.size() * sizeof(int64_t));
    return;
  }
  const ModuleOutput& out = module_output(t.source, t.part != Part::scale);
  switch (t.part) {
    case Part::values:
      writer.append(out.rtn.values.data(), out.rtn.values.size());
      break;
    case Part::packed:
      writer.append(out.packed.data(), out.packed.size() * sizeof(int32_t));
      break;
    case Part::scale:
      writer.append(out.rtn.scales.data(), out.rtn.scales.size());
      break;
    default:
      break;
  }
}

QuantizeReport Quantizer::run() {
  const auto start = std::chrono::steady_clock::now();
  check_options();
  nlohmann::ordered_json config = read_config();
  std::vector<std::string> ignore_entries{"lm_head"};
  // Mixture-of-experts routers stay dense, as llm-compressor's MoE recipes leave them.
  for (const auto& [suffix, entry] :
       {std::pair<std::string_view, const char*>{".mlp.gate", "re:.*mlp.gate$"},
        {".mlp.shared_expert_gate", "re:.*mlp.shared_expert_gate$"},
        {".block_sparse_moe.gate", "re:.*block_sparse_moe.gate$"},
        {".block_sparse_moe.router.layer", "re:.*block_sparse_moe.router.layer$"}})
    for (const LinearModule& m : options_.modules)
      if (m.name.ends_with(suffix)) {
        ignore_entries.emplace_back(entry);
        break;
      }
  ignore_entries.insert(ignore_entries.end(), options_.ignore.begin(), options_.ignore.end());
  const IgnoreList ignore(ignore_entries);
  const Checkpoint checkpoint = Checkpoint::open_dir(options_.input_dir);
  const std::vector<PlannedTensor> planned = plan(checkpoint, ignore);
  for (const std::string& name : checkpoint.names())
    report_.bytes_read += checkpoint.tensor(name).bytes;

  quant::StagingDir staging(options_.output_dir, options_.replace_existing, options_.notice);
  std::vector<TensorSpec> specs;
  for (const PlannedTensor& t : planned) specs.push_back(t.spec);
  CheckpointWriter writer(staging.path(), specs, options_.max_shard_bytes);
  WriteProgress progress{0, static_cast<int64_t>(specs.size()), 0, writer.total_data_bytes()};
  for (const PlannedTensor& t : planned) {
    write_tensor(t, writer);
    ++progress.tensors_done;
    progress.bytes_done = writer.data_bytes_written();
    if (options_.progress) options_.progress(progress);
  }
  cached_.reset();
  writer.finish();

  config["quantization_config"] = nlohmann::ordered_json::parse(
      quant::compressed_tensors_config(options_, ignore.entries()).dump());
  quant::write_config_json(config, staging.path());
  report_.copied_files = quant::copy_tokenizer_files(options_.input_dir, staging.path());
  staging.commit();
  report_.bytes_written = quant::directory_bytes(options_.output_dir);

  report_.output_dir = options_.output_dir;
  report_.output_tensors = static_cast<int64_t>(specs.size());
  report_.shards = writer.shard_count();
  report_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report_;
}

}  // namespace

QuantizeReport quantize_checkpoint(const QuantizeOptions& options) {
  return Quantizer(options).run();
}

}  // namespace dq4
