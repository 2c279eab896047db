#pragma once
// `dq4 quantize`: a Hugging Face model directory (F32, BF16 or F16 weights) -> a compressed-tensors
// int4 checkpoint (W4A8 or W4A16) that vLLM and dq4 load, by round-to-nearest (rtn.h).
//
// The model is streamed tensor by tensor: input pages are released after each tensor, so the peak
// memory is a few times the largest linear weight, not the model. The output is written into a
// staging directory renamed into place at the end; a failure leaves no output directory.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dq4/io/checkpoint_writer.h"
#include "dq4/io/model_config.h"
#include "dq4/io/quant_config.h"

namespace dq4 {

// How far a streamed write has come, for progress bars.
struct WriteProgress {
  int64_t tensors_done = 0, tensors_total = 0;
  uint64_t bytes_done = 0, bytes_total = 0;  // output tensor data
};
using ProgressCallback = std::function<void(const WriteProgress&)>;
// A line for the user that is neither progress nor an error (a stale staging folder removed).
using NoticeCallback = std::function<void(const std::string&)>;

struct QuantizeOptions {
  std::string input_dir;
  // The model's linear modules (dq4::Architecture::linear_modules()): the tensors that may be
  // quantized. The quantizer itself knows no architecture.
  std::vector<LinearModule> modules;
  std::string output_dir;
  int64_t group_size = 32;                            // 0: one scale per output channel
  bool quantize_activations = true;                   // W4A8 (int8 dynamic per-token); false: W4A16
  WeightFormat format = WeightFormat::int_quantized;  // or pack_quantized
  // Modules left unquantized besides "lm_head" and the routers of mixtures of experts ("mlp.gate",
  // "mlp.shared_expert_gate", "block_sparse_moe.gate"): exact module names or "re:" regexes
  // matched at the start of the name (Python's re.match), as compressed-tensors' ignore list.
  std::vector<std::string> ignore;
  uint64_t max_shard_bytes = kDefaultMaxShardBytes;
  bool replace_existing = false;
  ProgressCallback progress;  // optional, called after each output tensor
  // Optional: told about each staging folder of output_dir left by a killed run and removed.
  NoticeCallback notice;
};

struct QuantizeReport {
  std::string output_dir;
  int64_t linear_modules = 0;     // of the model
  int64_t quantized_modules = 0;  // the rest are ignored (copied unchanged)
  int64_t output_tensors = 0;
  size_t shards = 0;
  int copied_files = 0;        // tokenizer and generation files
  uint64_t bytes_read = 0;     // input tensor data (the model's size)
  uint64_t bytes_written = 0;  // output files, headers and config included
  double seconds = 0;
};

// Throws dq4::Error naming the file, tensor or field at fault (a missing config.json or tensor,
// a weight dtype other than F32/BF16/F16, a NaN or infinite weight, an existing output directory
// without replace_existing, an input that is already quantized).
QuantizeReport quantize_checkpoint(const QuantizeOptions& options);

}  // namespace dq4
