// libFuzzer target: arbitrary bytes as the model.safetensors of a tiny Llama (stories260K's
// config.json from $DQ4_FIXTURES), loaded layer by layer through Linear under one config, so
// that each input costs one load: the W4A16 pack-quantized fixture's when the input names packed
// weights, else the unquantized model's (odd-sized inputs also quantize its dense layers to W4A8
// G32 at load). Loading must either succeed, and forward() then runs, or throw dq4::Error; never
// crash, hang or read outside the file (ASan and UBSan watch).

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "dq4/io/checkpoint.h"
#include "dq4/io/model_config.h"
#include "dq4/io/quant_config.h"
#include "dq4/kernels/error.h"
#include "dq4/kernels/thread_pool.h"
#include "dq4/layers/linear.h"
#include "dq4/model/architecture.h"

namespace {

namespace fs = std::filesystem;

struct Model {
  std::string dir;  // holds config.json and a link to the input's model.safetensors
  dq4::ModelConfig config;
  dq4::QuantizationConfig quant;
};

struct Setup {
  fs::path input;  // where each input is written
  std::vector<Model> models;
};

const Setup& setup() {
  static const Setup* instance = [] {
    const char* fixtures = std::getenv("DQ4_FIXTURES");
    if (fixtures == nullptr) {
      std::fprintf(stderr, "checkpoint_load_fuzz: set DQ4_FIXTURES\n");
      std::abort();
    }
    auto* s = new Setup;
    const fs::path root =
        fs::temp_directory_path() / ("dq4-checkpoint-load-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(root);
    s->input = root / "model.safetensors";
    std::ofstream(s->input).close();
    for (const char* fixture : {"stories260K-hf-w4a16-ct", "stories260K-hf"}) {
      const fs::path dir = root / fixture;
      fs::create_directories(dir);
      fs::copy_file(fs::path(fixtures) / fixture / "config.json", dir / "config.json",
                    fs::copy_options::overwrite_existing);
      fs::create_symlink(s->input, dir / "model.safetensors");
      s->models.push_back({dir.string(), dq4::ModelConfig::read(dir.string()),
                           dq4::QuantizationConfig::read(dir.string())});
    }
    std::atexit([] { fs::remove_all(instance->input.parent_path()); });
    return s;
  }();
  return *instance;
}

void run_layer(const dq4::Linear& linear, dq4::ThreadPool& pool) {
  const int64_t m = 2;
  std::vector<float> x(static_cast<size_t>(m * linear.in_features()), 0.5f);
  std::vector<float> y(static_cast<size_t>(m * linear.out_features()));
  linear.forward(x.data(), m, linear.in_features(), y.data(), linear.out_features(), &pool);
}

void load_and_run(const Model& model, const dq4::LinearOptions& options, dq4::ThreadPool& pool) {
  const dq4::Checkpoint checkpoint = dq4::Checkpoint::open_dir(model.dir);
  for (const auto& group :
       dq4::Architecture::from_config(model.config, "config.json").linear_groups())
    run_layer(dq4::Linear::load(checkpoint, model.quant, group, options), pool);
  if (model.config.tie_word_embeddings)
    run_layer(
        dq4::Linear::from_dense_tensor(checkpoint.tensor("model.embed_tokens.weight"), options),
        pool);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Setup& s = setup();
  {
    std::ofstream out(s.input, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  static dq4::ThreadPool pool(1);
  dq4::LinearOptions options;
  if (size % 2 == 1) options.quantize_dense_group = 32;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const bool packed = bytes.find("weight_packed") != std::string_view::npos;
  try {
    load_and_run(s.models[packed ? 0 : 1], options, pool);
  } catch (const dq4::Error&) {
  }
  return 0;
}
