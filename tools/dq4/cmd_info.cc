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
void print_family(const KernelFamily<Kernel>& family,
                  std::string (*note)(const KernelFamily<Kernel>&, const Kernel&) = nullptr) {
  const Kernel& chosen = family.default_kernel();
  const std::string id(family.id());
  std::printf("%s kernels:\n", id.c_str());
  for (const Kernel* kernel : family.kernels()) {
    std::string why;
    const bool ok = family.supported(*kernel, &why);
    std::printf("  %-16s %-38s %s%s\n", std::string(family.name(*kernel)).c_str(),
                std::string(family.variant(*kernel)).c_str(), ok ? "supported" : why.c_str(),
                note != nullptr ? note(family, *kernel).c_str() : "");
  }
  const char* forced = std::getenv("DQ4_ISA");
  std::printf("%s kernel chosen: %s (%s)%s\n", id.c_str(), std::string(family.name(chosen)).c_str(),
              std::string(family.variant(chosen)).c_str(),
              forced != nullptr && *forced != '\0' ? " (forced by DQ4_ISA)" : "");
}

std::string dense_note(const KernelFamily<dense::Kernel>& family, const dense::Kernel& kernel) {
  return family.exact(kernel) ? "" : " (bf16 activations: chosen only by name)";
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
#if defined(__x86_64__)
  std::printf("amx: %s\n", cpu_features().amx_status.c_str());
#endif
  std::printf("threads: %d\n", ThreadPool::global().size());
  print_family(w4a8::family());
  print_family(w4a16::family());
  print_family(dense::family(), dense_note);
  print_family(attention::family());
  return 0;
}

}  // namespace dq4::cli
