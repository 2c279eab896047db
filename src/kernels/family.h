#pragma once
// The shape every kernel family (w4a8, w4a16, dense, attention) has: a descriptor `Kernel` per
// variant (one file per ISA), a Registry of the variants compiled in and the run-time choice among
// them (CPU features and DQ4_ISA), and a driver that checks the arguments, prepares the rows and
// runs the output tiles over the pool, handing each call the scratch it needs.
//
// A variant has two names: `name`, the ISA, which DQ4_ISA uses ("avx512_vnni"), and `variant`,
// what it computes, spelled <activations>_<weights>_<output>_<isa>_<tiles> with KleidiAI's type
// names ("qai8dx_qsi4_f32_avx512vnni_4x64_8x32": int8 activations quantized per row, signed int4
// weights, f32 out; rows x columns of its tiles), which `dq4 info` and the benchmarks print.
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

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "dq4/kernels/cpu_features.h"
#include "dq4/kernels/error.h"
#include "dq4/kernels/matmul_args.h"
#include "dq4/kernels/thread_pool.h"

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

// A family's compiled variants, the scalar reference first and the best last.
template <class Kernel>
class Registry {
 public:
  Registry(std::string_view family, std::vector<const Kernel*> kernels)
      : family_(family), kernels_(std::move(kernels)) {}

  const std::vector<const Kernel*>& kernels() const { return kernels_; }
  const Kernel* find(std::string_view name) const { return find_by_name(kernels_, name); }
  const Kernel& select(std::string_view isa_override) const {
    return select_kernel(family_, kernels_, isa_override);
  }
  // select() for the process's DQ4_ISA (unset: automatic), decided on first use; an invalid
  // DQ4_ISA throws on every use.
  const Kernel& automatic() const {
    std::call_once(once_, [this] {
      const char* env = std::getenv("DQ4_ISA");
      automatic_ = &select(env != nullptr ? env : "");
    });
    return *automatic_;
  }

 private:
  std::string_view family_;
  std::vector<const Kernel*> kernels_;
  mutable std::once_flag once_;
  mutable const Kernel* automatic_ = nullptr;
};

// Defines the registry functions every family's public header declares, over the family's
// `registry()` (its registry.cc: the one place that lists its variants).
#define DQ4_KERNEL_FAMILY_FUNCTIONS                                                  \
  std::vector<const Kernel*> compiled_kernels() { return registry().kernels(); }     \
  const Kernel* find_kernel(std::string_view name) { return registry().find(name); } \
  std::string_view kernel_name(const Kernel& kernel) { return kernel.name; }         \
  std::string_view variant_name(const Kernel& kernel) { return kernel.variant; }     \
  bool kernel_supported(const Kernel& kernel, std::string* why) {                    \
    return ::dq4::kernels::supported_here(kernel, why);                              \
  }                                                                                  \
  const Kernel& select_kernel(std::string_view isa_override) {                       \
    return registry().select(isa_override);                                          \
  }                                                                                  \
  const Kernel& default_kernel() { return registry().automatic(); }

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

// The driver's steps, in the order a family's matmul() takes them.

// What a call runs on: `pool` (null: the global pool) and `max_threads` of it (0: all).
struct CallThreads {
  ThreadPool& pool;
  int count;
};
inline CallThreads call_threads(ThreadPool* pool, int max_threads) {
  ThreadPool& p = pool != nullptr ? *pool : ThreadPool::global();
  return {p, max_threads > 0 ? std::min(max_threads, p.size()) : p.size()};
}

// Runs `prepare(m0, m1)` over m rows split in one range per thread. It prepares the rows as the
// family's kernels read them (quantized, converted, or only checked) and returns the first row
// of [m0, m1) holding a NaN or an infinity, or -1: such a row is an error naming `function`.
template <class Prepare>
void prepare_rows(std::string_view function, int64_t m, const CallThreads& threads,
                  Prepare&& prepare) {
  const int64_t tasks = std::min<int64_t>(m, threads.count);
  std::vector<int64_t> bad_row(static_cast<size_t>(tasks), -1);
  threads.pool.run(
      tasks, [&](int64_t t) { bad_row[t] = prepare(m * t / tasks, m * (t + 1) / tasks); },
      threads.count);
  for (int64_t row : bad_row)
    if (row >= 0)
      throw Error(std::string(function) + ": activation row " + std::to_string(row) +
                  " holds a NaN or infinite value");
}

// Runs `run_tile(m0, m1, p0, p1)` for every non-empty tile of split_tiles(m, panels, threads).
template <class RunTile>
void run_tiles(int64_t m, int64_t panels, const CallThreads& threads, RunTile&& run_tile) {
  const TileSplit split = split_tiles(m, panels, threads.count);
  threads.pool.run(
      split.tiles(),
      [&](int64_t t) {
        int64_t m0, m1, p0, p1;
        split.tile(t, &m0, &m1, &p0, &p1);
        if (p0 < p1) run_tile(m0, m1, p0, p1);
      },
      threads.count);
}

// At least `bytes` of scratch (64-byte aligned) owned by the calling thread and kept for its
// later calls: kernels never allocate, the driver hands each call the scratch it asks for.
uint8_t* thread_scratch(size_t bytes);

}  // namespace dq4::kernels
