// dq4 quantize: a float Hugging Face model -> a compressed-tensors W4A8 / W4A16 int4 checkpoint.

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "dq4/convert/quantize.h"
#include "dq4/kernels/error.h"
#include "dq4/model/architecture.h"
#include "progress.h"

namespace dq4::cli {
namespace {

void declare_options(Args& args) {
  args.positional("IN_DIR", "the Hugging Face model directory to quantize");
  args.option("output", "DIR", "output directory (default: <basename of IN_DIR>-w4a8-<scheme>)")
      .short_name('o', "output");
  args.option("scheme", "NAME", "channelwise (one scale per output channel) or groupwise",
              "groupwise");
  args.option("group-size", "G", "columns per scale with --scheme groupwise", "32");
  args.option("activations", "KIND", "int8 (W4A8, dynamic per token) or none (W4A16)", "int8");
  args.option(
      "format", "NAME",
      "int-quantized (int8 per value: what vLLM loads for W4A8) or pack-quantized (8 per int32)",
      "int-quantized");
  args.option("ignore", "NAME_OR_RE",
              "modules left unquantized besides lm_head: exact names or re:<regex> matched at "
              "the start; comma-separated")
      .repeatable("ignore");
  args.option("max-shard-size", "SIZE", "largest output file (5GB, 500MB, 2GiB...)", "5GB");
  args.option("force", "", "replace an existing output directory");
}

// "a,re:x{1,2},b" -> {"a", "re:x{1,2}", "b"}: commas inside brackets belong to a regex.
std::vector<std::string> split_ignore_list(const std::string& text) {
  std::vector<std::string> items(1);
  int depth = 0;
  for (const char c : text) {
    if (c == '(' || c == '[' || c == '{') ++depth;
    if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
    if (c == ',' && depth == 0) {
      items.emplace_back();
    } else {
      items.back().push_back(c);
    }
  }
  std::erase(items, std::string());
  return items;
}

int64_t group_size_option(const Args& args) {
  if (args.value("scheme") == "channelwise") return 0;
  if (args.value("scheme") != "groupwise")
    throw Error("option --scheme must be channelwise or groupwise, got '" + args.value("scheme") +
                "'");
  const int64_t g = args.integer("group-size");
  if (g <= 0) throw Error("option --group-size must be positive, got " + std::to_string(g));
  return g;
}

WeightFormat format_option(const Args& args) {
  const std::string format = args.value("format");
  if (format == "int-quantized") return WeightFormat::int_quantized;
  if (format == "pack-quantized") return WeightFormat::pack_quantized;
  throw Error("option --format must be int-quantized or pack-quantized, got '" + format + "'");
}

bool activations_option(const Args& args) {
  const std::string kind = args.value("activations");
  if (kind == "int8") return true;
  if (kind == "none") return false;
  throw Error("option --activations must be int8 or none, got '" + kind + "'");
}

}  // namespace

int run_quantize(int argc, char** argv, int first) {
  Args args("quantize",
            "Quantizes the linear layers of the Hugging Face model in IN_DIR (F32, BF16 or F16;\n"
            "Llama family) to int4 by round-to-nearest exactly as compressed-tensors does, and\n"
            "writes a compressed-tensors checkpoint (config.json with its quantization_config,\n"
            "safetensors shards, the tokenizer files). Default: W4A8, groupwise G = 32,\n"
            "int-quantized, lm_head left unquantized. The output appears only when complete.");
  declare_options(args);
  if (!args.parse(argc, argv, first)) return 0;

  QuantizeOptions options;
  options.input_dir = args.value("IN_DIR");
  options.modules = Architecture::read(options.input_dir).linear_modules();
  options.group_size = group_size_option(args);
  options.quantize_activations = activations_option(args);
  options.format = format_option(args);
  for (const std::string& entry : args.values("ignore"))
    for (std::string& item : split_ignore_list(entry)) options.ignore.push_back(std::move(item));
  options.max_shard_bytes = args.byte_size("max-shard-size");
  options.replace_existing = args.flag("force");
  options.output_dir = args.value("output");
  if (options.output_dir.empty()) {
    std::filesystem::path input = std::filesystem::absolute(options.input_dir).lexically_normal();
    if (input.filename().empty()) input = input.parent_path();  // "dir/" names "dir"
    const std::string base = input.filename().string();
    options.output_dir =
        base + (options.quantize_activations ? "-w4a8-" : "-w4a16-") + args.value("scheme");
  }

  ProgressBar bar("quantize");
  options.progress = bar.callback();
  options.notice = stderr_notice();
  const QuantizeReport r = quantize_checkpoint(options);
  const std::string scheme =
      options.group_size == 0 ? "channelwise" : "group size " + std::to_string(options.group_size);
  std::printf("quantized %lld of %lld linear modules (%s, %s, %s) into %s\n",
              static_cast<long long>(r.quantized_modules), static_cast<long long>(r.linear_modules),
              options.quantize_activations ? "W4A8" : "W4A16",
              std::string(weight_format_name(options.format)).c_str(), scheme.c_str(),
              r.output_dir.c_str());
  std::printf("%lld tensors in %zu file%s, %d tokenizer/generation file%s copied\n",
              static_cast<long long>(r.output_tensors), r.shards, r.shards == 1 ? "" : "s",
              r.copied_files, r.copied_files == 1 ? "" : "s");
  const double seconds = r.seconds > 0 ? r.seconds : 1e-9;
  std::printf("read %s, wrote %s in %.2f s: %.1f MB/s read, %.1f MB/s written\n",
              megabytes(r.bytes_read).c_str(), megabytes(r.bytes_written).c_str(), r.seconds,
              r.bytes_read / 1e6 / seconds, r.bytes_written / 1e6 / seconds);
  std::printf(
      "peak RSS %s (VmHWM: anonymous plus mapped file pages; input pages are released after "
      "each tensor)\n",
      megabytes(peak_rss_bytes()).c_str());
  return 0;
}

}  // namespace dq4::cli
