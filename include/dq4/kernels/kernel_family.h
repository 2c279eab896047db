#pragma once
// What every kernel family (w4a8, w4a16, dense, attention) answers about its variants: the ones
// compiled into this build, their names, whether this CPU runs them, and the run-time choice
// among them. Each family's header declares `const KernelFamily<Kernel>& family()`; its
// registry.cc is the one place that lists its variants.
//
// A variant has two names: `name`, the ISA, which DQ4_ISA uses ("avx512_vnni"), and `variant`,
// what it computes, spelled <activations>_<weights>_<output>_<isa>_<tiles> with KleidiAI's type
// names ("qai8dx_qsi4_f32_avx512vnni_5x64_8x32": int8 activations quantized per row, signed int4
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
// The automatic choice is the best kernel eligible on this CPU (eligible() below).

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace dq4 {

// `Kernel`: the family's variant descriptor, opaque outside the family (src/kernels/<family>).
template <class Kernel>
class KernelFamily {
 public:
  // `kernels`: the scalar reference first, the best last.
  KernelFamily(std::string_view id, std::vector<const Kernel*> kernels);
  KernelFamily(const KernelFamily&) = delete;
  KernelFamily& operator=(const KernelFamily&) = delete;

  // The family as DQ4_ISA's `<family>:` entries name it ("w4a8").
  std::string_view id() const { return id_; }
  // The kernels compiled into this build: the scalar reference first, the best last.
  const std::vector<const Kernel*>& kernels() const { return kernels_; }
  // The kernel named `name` (e.g. "avx512_vnni"), or nullptr when this build lacks it.
  const Kernel* find(std::string_view name) const;
  // What DQ4_ISA calls `kernel`: its ISA.
  std::string_view name(const Kernel& kernel) const;
  // What `kernel` computes: data types, ISA, tiles.
  std::string_view variant(const Kernel& kernel) const;
  // Whether `kernel` computes the family's exact math; one that does not is chosen only by name.
  bool exact(const Kernel& kernel) const;
  // Whether this CPU can run `kernel`; if not and `why` is given, says which feature is missing.
  bool supported(const Kernel& kernel, std::string* why = nullptr) const;
  // Whether the automatic choice may pick `kernel` here: this CPU runs it, it computes the
  // family's exact math, and it is tuned for this kind of core (a variant tuned for other cores,
  // or one kept out of the automatic choice, runs only by name).
  bool eligible(const Kernel& kernel) const;
  // The choice for the DQ4_ISA value `isa_override` (empty: automatic). Throws dq4::Error as
  // described above.
  const Kernel& select(std::string_view isa_override) const;
  // select() for the process's DQ4_ISA (unset: automatic), decided on first use; an invalid
  // DQ4_ISA throws on every use.
  const Kernel& default_kernel() const;

 private:
  std::string_view id_;
  std::vector<const Kernel*> kernels_;
  mutable std::once_flag once_;
  mutable const Kernel* default_ = nullptr;
};

}  // namespace dq4
