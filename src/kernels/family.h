#pragma once
// What the kernel families (w4a8, dense, ...) share: the run-time choice of a variant (CPU
// features and DQ4_ISA), the checks of matmul() arguments and the split of an output into tiles.
//
// DQ4_ISA is a comma-separated list of entries, each `<kernel>` or `<family>:<kernel>`:
//   * a family uses the kernel of its own `<family>:<kernel>` entry if there is one, else the
//     kernel of the first plain `<kernel>` entry it has, else its automatic choice;
//   * a plain entry naming a kernel this family lacks (but some family has, e.g. avx512_bf16 for
//     w4a8) leaves this family on its automatic choice, so DQ4_ISA=avx2 forces the AVX2 variant
//     of every family and DQ4_ISA=dense:avx512_bf16 only the dense one;
//   * an entry naming no known kernel or family, a `<family>:` entry naming a kernel that family
//     lacks, and a chosen kernel this CPU cannot run are errors (dq4::Error).
// The automatic choice is the best supported kernel that computes the family's exact math.

#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "dq4/cpu_features.h"
#include "dq4/error.h"
#include "dq4/matmul_args.h"

namespace dq4::kernels {

// The kernel DQ4_ISA (`isa_override`) asks `family` to use, or "" for the automatic choice.
// `names`: the family's compiled kernels. Throws dq4::Error as described above.
std::string requested_kernel(std::string_view family, std::string_view isa_override,
                             const std::vector<std::string_view>& names);

// "kernel 'x' needs ..., which this CPU lacks (it has: ...)".
std::string unsupported_reason(const char* name, const char* needs);

// Kernel: a family's descriptor with `name`, `needs` and `supported(const CpuFeatures&)`; a
// member `exact` set to false keeps a kernel out of the automatic choice.
template <class Kernel>
const Kernel& select_kernel(std::string_view family, const std::vector<const Kernel*>& kernels,
                            std::string_view isa_override) {
  std::vector<std::string_view> names;
  for (const Kernel* k : kernels) names.push_back(k->name);
  const std::string wanted = requested_kernel(family, isa_override, names);
  if (!wanted.empty()) {
    for (const Kernel* k : kernels) {
      if (wanted != k->name) continue;
      if (!k->supported(cpu_features()))
        throw Error("DQ4_ISA: " + unsupported_reason(k->name, k->needs));
      return *k;
    }
  }
  for (auto it = kernels.rbegin(); it != kernels.rend(); ++it) {
    bool automatic = true;
    if constexpr (requires { (*it)->exact; }) automatic = (*it)->exact;
    if (automatic && (*it)->supported(cpu_features())) return **it;
  }
  return *kernels.front();
}

// The kernel of `kernels` named `name`, or nullptr.
template <class Kernel>
const Kernel* find_by_name(const std::vector<const Kernel*>& kernels, std::string_view name) {
  for (const Kernel* k : kernels)
    if (name == k->name) return k;
  return nullptr;
}

// Whether this CPU runs `kernel`; if not, `why` (when given) says which feature is missing.
template <class Kernel>
bool supported_here(const Kernel& kernel, std::string* why) {
  if (kernel.supported(cpu_features())) return true;
  if (why != nullptr) *why = unsupported_reason(kernel.name, kernel.needs);
  return false;
}

// select_kernel() for the process's DQ4_ISA (unset = automatic).
template <class Kernel>
const Kernel& select_from_environment(std::string_view family,
                                      const std::vector<const Kernel*>& kernels) {
  const char* env = std::getenv("DQ4_ISA");
  return select_kernel(family, kernels, env != nullptr ? env : "");
}

// Throws dq4::Error naming `function` and the field for invalid arguments of a matmul of packed
// weights [n, k] (`packed` false: the weights were never packed).
void check_matmul_args(std::string_view function, bool packed, int64_t n, int64_t k,
                       const MatmulArgs& args);
// The same checks but of args.x and args.ldx, for a matmul whose input comes quantized.
void check_output_args(std::string_view function, bool packed, int64_t n, const MatmulArgs& args);

// The output split into row_tiles x panel_tiles tiles: up to row_block rows x a contiguous range
// of panels (a contiguous byte range of the weights), enough tiles to balance `threads`.
struct TileSplit {
  int64_t m = 0, panels = 0, row_block = 0, row_tiles = 0, panel_tiles = 0;

  int64_t tiles() const { return row_tiles * panel_tiles; }
  // Rows [*m0, *m1) and panels [*p0, *p1) of tile t; the panel range may be empty.
  void tile(int64_t t, int64_t* m0, int64_t* m1, int64_t* p0, int64_t* p1) const {
    const int64_t rt = t / panel_tiles, pt = t % panel_tiles;
    *m0 = rt * row_block;
    *m1 = *m0 + row_block < m ? *m0 + row_block : m;
    *p0 = panels * pt / panel_tiles;
    *p1 = panels * (pt + 1) / panel_tiles;
  }
};
TileSplit split_tiles(int64_t m, int64_t panels, int threads, int64_t row_block = 128);

}  // namespace dq4::kernels
