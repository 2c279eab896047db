// dq4 export-gguf: a Hugging Face model directory -> one GGUF file for llama.cpp.

#include <cstdio>
#include <string>

#include "args.h"
#include "commands.h"
#include "dq4/convert/gguf_export.h"
#include "dq4/kernels/error.h"
#include "model_options.h"

namespace dq4::cli {

int run_export_gguf(int argc, char** argv, int first) {
  Args args(
      "export-gguf",
      "Writes the model in IN_DIR (Llama, Mistral, Qwen2, Qwen3, Gemma 2 / 3, Granite, SmolLM3,\n"
      "OLMo 2 / 3, EXAONE 4, Mistral 3 / Ministral 3 (text), Ernie 4.5, GLM-4, Phi-3, and the\n"
      "mixtures of experts Qwen3-MoE, Qwen2-MoE, Mixtral, OLMoE, Ernie 4.5 MoE, GLM-4 MoE, their\n"
      "experts stacked) as one GGUF file for llama.cpp, as its convert_hf_to_gguf.py names and\n"
      "lays it out. A W4A8 or W4A16 group-32 compressed-tensors checkpoint becomes Q4_0 with the "
      "same\n"
      "int4 values and scales (a scale f16 cannot hold exactly is an error, so are other group\n"
      "sizes); its other tensors keep their dtype, norms and biases become F32. An unquantized\n"
      "model becomes an F32 GGUF. The tokenizer goes in as llama.cpp's vocabulary metadata.");
  args.positional("IN_DIR", "the Hugging Face model directory");
  args.option("output", "FILE", "the .gguf file to write (required)").short_name('o', "output");
  args.option("force", "", "replace an existing output file");
  if (!args.parse(argc, argv, first)) return 0;
  if (args.value("output").empty()) throw Error("missing option --output (-o FILE.gguf)");

  GgufExportOptions options;
  options.model_dir = args.value("IN_DIR");
  options.output = args.value("output");
  options.replace_existing = args.flag("force");
  const GgufExportReport r = export_gguf(options);
  std::printf("wrote %s: architecture %s, %s, %lld tensors (%lld Q4_0), %.1f MB in %.2f s\n",
              options.output.c_str(), r.architecture.c_str(), r.file_type.c_str(),
              static_cast<long long>(r.tensors), static_cast<long long>(r.q4_0_tensors),
              r.bytes / 1e6, r.seconds);
  for (const std::string& note : r.notes) std::printf("note: %s\n", note.c_str());
  if (!r.unused_tensors.empty())
    std::printf("note: left out of the file: %s\n", unused_tensor_list(r.unused_tensors).c_str());
  return 0;
}

}  // namespace dq4::cli
