#include "model_options.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "dq4/kernels/error.h"
#include "load_options.h"
#include "progress.h"

namespace dq4::cli {

void declare_model_options(Args& args) {
  args.option("model", "DIR", "the model directory (config.json, safetensors, tokenizer.json)")
      .short_name('m', "model");
  declare_load_options(args);
  args.option("quantize", "MODE",
              "none, w4a8-ch or w4a8-g<G>: quantize an unquantized checkpoint's layers at load "
              "(lm_head stays as stored; see --quantize-dense)",
              "none");
  args.option("kv-cache-dtype", "TYPE", "f32 or bf16", "f32");
  args.option("threads", "N", "threads (default: DQ4_THREADS or all CPUs)");
}

std::optional<int64_t> quantize_option(const Args& args) {
  const std::string mode = args.value("quantize");
  if (mode == "none") return std::nullopt;
  if (mode == "w4a8-ch") return 0;
  if (const std::optional<int64_t> group = w4a8_group(mode)) return group;
  throw Error("option --quantize: expected none, w4a8-ch or w4a8-g<G> (G a multiple of 32), got '" +
              mode + "'");
}

attention::KvType kv_type_option(const Args& args) {
  const std::string t = args.value("kv-cache-dtype");
  if (t == "f32") return attention::KvType::f32;
  if (t == "bf16") return attention::KvType::bf16;
  throw Error("option --kv-cache-dtype: expected f32 or bf16, got '" + t + "'");
}

ModelOptions draft_model_options(const Args& args) {
  ModelOptions options;
  options.linear = linear_options(args);
  return options;
}

std::string unused_tensor_list(const std::vector<std::string>& unused) {
  constexpr size_t kShown = 5;
  std::string text = std::to_string(unused.size()) + " checkpoint tensor" +
                     (unused.size() == 1 ? " is" : "s are") + " not used by dq4's model: ";
  for (size_t i = 0; i < std::min(unused.size(), kShown); ++i)
    text += (i > 0 ? ", " : "") + unused[i];
  if (unused.size() > kShown) text += ", and " + std::to_string(unused.size() - kShown) + " more";
  return text;
}

void warn_unused_tensors(const std::string& dir, const Model& model) {
  const std::vector<std::string>& unused = model.load_report().unused_tensors;
  if (!unused.empty())
    std::fprintf(stderr, "warning: %s (%s): %s\n", dir.c_str(), model.config().architecture.c_str(),
                 unused_tensor_list(unused).c_str());
}

void load_draft(SpeculativeConfig& speculative, LoadedModel& target, const Args& args) {
  load_draft_model(speculative, *target.tokenizer, target.model->vocab_size(),
                   draft_model_options(args), &target.threads());
  if (speculative.draft) warn_unused_tensors(speculative.model, *speculative.draft);
}

LoadedModel load_model(const Args& args, bool need_tokenizer, bool quiet) {
  const std::string dir = args.value("model");
  if (dir.empty()) throw Error("missing option --model (-m DIR)");
  LoadedModel loaded;
  if (!args.value("threads").empty()) {
    const int64_t threads = args.integer("threads");
    if (threads <= 0 || threads > 1024)
      throw Error("option --threads: expected 1..1024, got " + std::to_string(threads));
    loaded.pool = std::make_unique<ThreadPool>(static_cast<int>(threads));
  }
  ModelOptions options;
  options.linear = linear_options(args);
  options.quantize_group = quantize_option(args);
  kv_type_option(args);
  std::error_code ec;
  const bool has_tokenizer = std::filesystem::exists(dir + "/tokenizer.json", ec);
  if (need_tokenizer && !has_tokenizer)
    throw Error(dir + ": no tokenizer.json (dq4 needs the model's Hugging Face tokenizer)");
  if (has_tokenizer) loaded.tokenizer = std::make_unique<Tokenizer>(Tokenizer::from_directory(dir));
  {
    ProgressBar bar("loading");
    options.progress = [&bar](int64_t done, int64_t total) { bar.update(done, total, "layers"); };
    loaded.model = Model::load(dir, options, loaded.pool.get());
  }
  warn_unused_tensors(dir, *loaded.model);
  if (!quiet) {
    const LoadReport& r = loaded.model->load_report();
    std::fprintf(stderr, "loaded %s in %.2f s: %s packed weights, %s embeddings; RSS peak %s\n",
                 dir.c_str(), r.seconds, megabytes(r.packed_bytes).c_str(),
                 megabytes(r.embedding_bytes).c_str(), megabytes(peak_rss_bytes()).c_str());
  }
  return loaded;
}

}  // namespace dq4::cli
