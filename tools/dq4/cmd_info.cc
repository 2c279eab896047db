// dq4 info: what this CPU offers and which kernel dq4 runs on it.

#include <cstdio>
#include <cstdlib>
#include <string>

#include "args.h"
#include "commands.h"
#include "dq4/kernels/attention.h"
#include "dq4/kernels/cpu_features.h"
#include "dq4/kernels/dense.h"
#include "dq4/kernels/thread_pool.h"
#include "dq4/kernels/w4a16.h"
#include "dq4/kernels/w4a8.h"

namespace dq4::cli {
namespace {

// One family's kernels (each supported or why not) and its choice. `note` adds to a kernel's line.
template <class Kernel>
void print_family(const char* family, const std::vector<const Kernel*>& kernels,
                  bool (*supported)(const Kernel&, std::string*),
                  std::string_view (*name)(const Kernel&),
                  std::string_view (*variant)(const Kernel&), const Kernel& chosen,
                  std::string (*note)(const Kernel&) = nullptr) {
  std::printf("%s kernels:\n", family);
  for (const Kernel* kernel : kernels) {
    std::string why;
    const bool ok = supported(*kernel, &why);
    std::printf("  %-12s %-38s %s%s\n", std::string(name(*kernel)).c_str(),
                std::string(variant(*kernel)).c_str(), ok ? "supported" : why.c_str(),
                note != nullptr ? note(*kernel).c_str() : "");
  }
  const char* forced = std::getenv("DQ4_ISA");
  std::printf("%s kernel chosen: %s (%s)%s\n", family, std::string(name(chosen)).c_str(),
              std::string(variant(chosen)).c_str(),
              forced != nullptr && *forced != '\0' ? " (forced by DQ4_ISA)" : "");
}

std::string dense_note(const dense::Kernel& kernel) {
  return dense::kernel_is_exact(kernel) ? "" : " (bf16 activations: chosen only by name)";
}

}  // namespace

int run_info(int argc, char** argv, int first) {
  Args args(
      "info",
      "Prints the CPU features found, every W4A8, W4A16, dense and attention kernel of this\n"
      "build with whether this CPU can run it, and the kernels chosen (DQ4_ISA=<name> forces\n"
      "one).");
  if (!args.parse(argc, argv, first)) return 0;
  std::printf("cpu features: %s\n", cpu_features().to_string().c_str());
  std::printf("threads: %d\n", ThreadPool::global().size());
  print_family("w4a8", w4a8::compiled_kernels(), w4a8::kernel_supported, w4a8::kernel_name,
               w4a8::variant_name, w4a8::default_kernel());
  print_family("w4a16", w4a16::compiled_kernels(), w4a16::kernel_supported, w4a16::kernel_name,
               w4a16::variant_name, w4a16::default_kernel());
  print_family("dense", dense::compiled_kernels(), dense::kernel_supported, dense::kernel_name,
               dense::variant_name, dense::default_kernel(), dense_note);
  print_family("attention", attention::compiled_kernels(), attention::kernel_supported,
               attention::kernel_name, attention::variant_name, attention::default_kernel());
  return 0;
}

}  // namespace dq4::cli
