#pragma once
// The shape every kernel family (w4a8, w4a16, dense, attention) has: a descriptor `Kernel` per
// variant (one file per ISA), the family's KernelFamily (dq4/kernels/kernel_family.h: the variants
// compiled in and the run-time choice among them, defined here for every family's registry.cc),
// and a driver that checks the arguments, prepares the rows and runs the output tiles over the
// pool, handing each call the scratch it needs.

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dq4/kernels/cpu_features.h"
#include "dq4/kernels/error.h"
#include "dq4/kernels/first_bad_row.h"
#include "dq4/kernels/kernel_family.h"
#include "dq4/kernels/matmul_args.h"
#include "dq4/kernels/thread_pool.h"

namespace dq4::kernels {

// The kernel DQ4_ISA (`isa_override`) asks `family` to use, or "" for the automatic choice.
// `names`: the family's compiled kernels. Throws dq4::Error as kernel_family.h describes.
std::string requested_kernel(std::string_view family, std::string_view isa_override,
                             const std::vector<std::string_view>& names);

// "kernel 'x' needs ..., which this CPU lacks (it has: ...)".
std::string unsupported_reason(const char* name, const char* needs);

}  // namespace dq4::kernels

namespace dq4 {

// KernelFamily over a descriptor with `name`, `variant`, `needs` and
// `supported(const CpuFeatures&)`; a member `exact` or `automatic` set to false keeps a kernel out
// of the automatic choice, as does a member `preferred` that is set and false for this CPU. A
// family's registry.cc instantiates it for its Kernel.

template <class Kernel>
KernelFamily<Kernel>::KernelFamily(std::string_view id, std::vector<const Kernel*> kernels)
    : id_(id), kernels_(std::move(kernels)) {}

template <class Kernel>
const Kernel* KernelFamily<Kernel>::find(std::string_view name) const {
  for (const Kernel* k : kernels_)
    if (name == k->name) return k;
  return nullptr;
}

template <class Kernel>
std::string_view KernelFamily<Kernel>::name(const Kernel& kernel) const {
  return kernel.name;
}

template <class Kernel>
std::string_view KernelFamily<Kernel>::variant(const Kernel& kernel) const {
  return kernel.variant;
}

template <class Kernel>
bool KernelFamily<Kernel>::exact(const Kernel& kernel) const {
  if constexpr (requires { kernel.exact; }) return kernel.exact;
  return true;
}

template <class Kernel>
bool KernelFamily<Kernel>::supported(const Kernel& kernel, std::string* why) const {
  if (kernel.supported(cpu_features())) return true;
  if (why != nullptr) *why = kernels::unsupported_reason(kernel.name, kernel.needs);
  return false;
}

template <class Kernel>
const Kernel& KernelFamily<Kernel>::select(std::string_view isa_override) const {
  std::vector<std::string_view> names;
  for (const Kernel* k : kernels_) names.push_back(k->name);
  const std::string wanted = kernels::requested_kernel(id_, isa_override, names);
  if (!wanted.empty()) {
    const Kernel& k = *find(wanted);
    if (!k.supported(cpu_features()))
      throw Error("DQ4_ISA: " + kernels::unsupported_reason(k.name, k.needs));
    return k;
  }
  for (auto it = kernels_.rbegin(); it != kernels_.rend(); ++it)
    if (eligible(**it)) return **it;
  return *kernels_.front();
}

template <class Kernel>
bool KernelFamily<Kernel>::eligible(const Kernel& kernel) const {
  if constexpr (requires { kernel.automatic; })
    if (!kernel.automatic) return false;
  if constexpr (requires { kernel.preferred; })
    if (kernel.preferred != nullptr && !kernel.preferred(cpu_features())) return false;
  return exact(kernel) && kernel.supported(cpu_features());
}

template <class Kernel>
const Kernel& KernelFamily<Kernel>::default_kernel() const {
  std::call_once(once_, [this] {
    const char* env = std::getenv("DQ4_ISA");
    default_ = &select(env != nullptr ? env : "");
  });
  return *default_;
}

}  // namespace dq4

namespace dq4::kernels {

// Throws dq4::Error naming `function` and the field for invalid arguments of a matmul of packed
// weights [n, k] (`packed` false: the weights were never packed).
void check_matmul_args(std::string_view function, bool packed, int64_t n, int64_t k,
                       const MatmulArgs& args);
// The same checks but of args.x and args.ldx, for a matmul whose input comes quantized.
void check_output_args(std::string_view function, bool packed, int64_t n, const MatmulArgs& args);

// What a call runs on: `pool` (null: the global pool) and `max_threads` of it (0: all).
struct CallThreads {
  ThreadPool& pool;
  int count;
};
inline CallThreads call_threads(ThreadPool* pool, int max_threads) {
  ThreadPool& p = pool != nullptr ? *pool : ThreadPool::global();
  return {p, max_threads > 0 ? std::min(max_threads, p.size()) : p.size()};
}

// The error of a bad activation row, naming `function`, when `bad` holds one.
inline void check_rows(std::string_view function, const FirstBadRow& bad) {
  if (bad.get() >= 0)
    throw Error(std::string(function) + ": activation row " + std::to_string(bad.get()) +
                " holds a NaN or infinite value");
}

// Runs a matmul as one job of `threads`: prepare(m0, m1) on the m rows split in one range per
// thread, which prepares them as the family's kernels read them (quantized, converted or only
// checked) and returns the first of them holding a NaN or an infinity, or -1; then, unless a row
// was bad (an error naming `function`), tiles.run(t) for every tile.
template <class Prepare, class Tiles>
void run_matmul(std::string_view function, int64_t m, const CallThreads& threads, Prepare&& prepare,
                const Tiles& tiles) {
  const int64_t tasks = std::min<int64_t>(m, threads.count);
  FirstBadRow bad;
  auto prepare_task = [&](int64_t t) { bad.add(prepare(m * t / tasks, m * (t + 1) / tasks)); };
  auto tile_task = [&](int64_t t) {
    if (bad.get() < 0) tiles.run(t);
  };
  const ThreadPool::Stage stages[] = {{tasks, prepare_task}, {tiles.count(), tile_task}};
  threads.pool.run_stages(stages, threads.count);
  check_rows(function, bad);
}

// At least `bytes` of scratch (64-byte aligned) owned by the calling thread and kept for its
// later calls: kernels never allocate, the driver hands each call the scratch it asks for.
uint8_t* thread_scratch(size_t bytes);
// The same for a user that can reuse what it left there: `owner` (nonzero) names the user, and
// *kept tells whether this thread's previous thread_scratch call, of either form, was by the same
// owner for the same size (so that nothing else has written the scratch since).
uint8_t* thread_scratch(size_t bytes, uint64_t owner, bool* kept);

}  // namespace dq4::kernels
