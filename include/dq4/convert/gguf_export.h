#pragma once
// `dq4 export-gguf`: a Hugging Face model directory of the Llama family to one GGUF file that
// llama.cpp runs, following llama.cpp's convert_hf_to_gguf.py: architecture "llama" (Llama,
// Mistral: q/k rows permuted from rotate-half to interleaved rope), "qwen2", "qwen3"; its
// metadata keys and tensor names; the vocabulary as tokenizer.ggml.* ("gpt2" for byte-level BPE,
// "llama" for SentencePiece-style BPE with byte fallback).
//
// Weights: int4 modules of a compressed-tensors checkpoint (W4A8 or W4A16, int- or
// pack-quantized) with groups of 32 become Q4_0 holding the same int4 values and scales (a scale
// f16 cannot hold exactly is refused, as are other group sizes and channelwise scales); the other
// tensors of a quantized checkpoint keep their dtype (F32, BF16, F16), 1-D ones (norms, biases)
// become F32; an unquantized checkpoint becomes an all-F32 GGUF.
//
// One deliberate difference from convert_hf_to_gguf.py: the llama3 rope factors (rope_freqs) use
// rope_scaling.original_max_position_embeddings, as transformers does, where the script reads a
// top-level key that Llama 3.x configs lack and falls back to 8192 (the same value for every
// real Llama 3.x checkpoint).

#include <cstdint>
#include <string>
#include <vector>

namespace dq4 {

struct GgufExportOptions {
  std::string model_dir;
  std::string output;  // the .gguf file
  bool replace_existing = false;
};

struct GgufExportReport {
  std::string architecture;  // GGUF general.architecture
  std::string file_type;     // "Q4_0", "F32", "BF16", "F16" (the file's main weight type)
  int64_t tensors = 0;
  int64_t q4_0_tensors = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  std::vector<std::string> notes;  // what llama.cpp will not do as dq4 does (a sliding window)
  // Checkpoint tensors the file leaves out, as dq4's model does not use them (unused_tensors()).
  std::vector<std::string> unused_tensors;
};

// Throws dq4::Error naming the file, module, tensor or config field at fault; nothing is left at
// `output` then.
GgufExportReport export_gguf(const GgufExportOptions& options);

}  // namespace dq4
