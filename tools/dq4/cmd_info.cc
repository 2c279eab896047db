// dq4 info: what this CPU offers and which kernel dq4 runs on it.

#include <cstdio>
#include <cstdlib>
#include <string>

#include "args.h"
#include "commands.h"
#include "dq4/cpu_features.h"
#include "dq4/dense.h"
#include "dq4/thread_pool.h"
#include "dq4/w4a16.h"
#include "dq4/w4a8.h"

namespace dq4::cli {

int run_info(int argc, char** argv, int first) {
  Args args("info",
            "Prints the CPU features found, every W4A8, W4A16 and dense kernel of this build with\n"
            "whether this CPU can run it, and the kernels chosen (DQ4_ISA=<name> forces one).");
  if (!args.parse(argc, argv, first)) return 0;
  std::printf("cpu features: %s\n", cpu_features().to_string().c_str());
  std::printf("threads: %d\n", ThreadPool::global().size());
  std::printf("w4a8 kernels:\n");
  for (const w4a8::Kernel* kernel : w4a8::compiled_kernels()) {
    std::string why;
    const bool ok = w4a8::kernel_supported(*kernel, &why);
    std::printf("  %-12s %s\n", std::string(w4a8::kernel_name(*kernel)).c_str(),
                ok ? "supported" : why.c_str());
  }
  const char* forced = std::getenv("DQ4_ISA");
  std::printf("w4a8 kernel chosen: %s%s\n",
              std::string(w4a8::kernel_name(w4a8::default_kernel())).c_str(),
              forced != nullptr && *forced != '\0' ? " (forced by DQ4_ISA)" : "");
  std::printf("w4a16 kernels:\n");
  for (const w4a16::Kernel* kernel : w4a16::compiled_kernels()) {
    std::string why;
    const bool ok = w4a16::kernel_supported(*kernel, &why);
    std::printf("  %-12s %s\n", std::string(w4a16::kernel_name(*kernel)).c_str(),
                ok ? "supported" : why.c_str());
  }
  std::printf("w4a16 kernel chosen: %s\n",
              std::string(w4a16::kernel_name(w4a16::default_kernel())).c_str());
  std::printf("dense kernels:\n");
  for (const dense::Kernel* kernel : dense::compiled_kernels()) {
    std::string why;
    const bool ok = dense::kernel_supported(*kernel, &why);
    std::printf("  %-12s %s%s\n", std::string(dense::kernel_name(*kernel)).c_str(),
                ok ? "supported" : why.c_str(),
                dense::kernel_is_exact(*kernel) ? "" : " (bf16 activations: chosen only by name)");
  }
  std::printf("dense kernel chosen: %s\n",
              std::string(dense::kernel_name(dense::default_kernel())).c_str());
  return 0;
}

}  // namespace dq4::cli
