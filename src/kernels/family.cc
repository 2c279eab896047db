#include "family.h"

#include <algorithm>
#include <cmath>

#include "dq4/kernels/aligned_buffer.h"

namespace dq4::kernels {
namespace {

// Every family and kernel name of any build (x86 and Arm), so that a plain DQ4_ISA entry that
// only another family has is told apart from a typo. A family adding a kernel name adds it here.
constexpr std::string_view kFamilies[] = {"w4a8", "w4a16", "dense", "attention"};
constexpr std::string_view kKernelNames[] = {
    "reference",        "avx2",        "avx_vnni", "avx512f",   "avx512f_zen4", "avx512_vnni",
    "avx512_vnni_zen4", "avx512_bf16", "amx",      "amx_model", "amx_bf16",     "neon",
    "neon_dotprod",     "neon_i8mm",   "neon_bf16"};

template <class List>
bool contains(const List& list, std::string_view name) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

std::string join(const std::vector<std::string_view>& names) {
  std::string out;
  for (std::string_view n : names) out += std::string(out.empty() ? "" : ", ") + std::string(n);
  return out;
}

std::vector<std::string_view> split_entries(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::string requested_kernel(std::string_view family, std::string_view isa_override,
                             const std::vector<std::string_view>& names) {
  if (isa_override.empty()) return "";
  const std::string quoted = "DQ4_ISA='" + std::string(isa_override) + "'";
  std::string qualified, plain;
  for (std::string_view entry : split_entries(isa_override)) {
    const size_t colon = entry.find(':');
    if (colon != std::string_view::npos) {
      const std::string_view owner = entry.substr(0, colon), kernel = entry.substr(colon + 1);
      if (!contains(kFamilies, owner))
        throw Error(quoted + ": '" + std::string(owner) + "' is not a kernel family (families: " +
                    join({std::begin(kFamilies), std::end(kFamilies)}) + ")");
      if (owner != family || !qualified.empty()) continue;
      if (!contains(names, kernel))
        throw Error(quoted + " names no kernel '" + std::string(kernel) + "' of " +
                    std::string(family) + " (available: " + join(names) + ")");
      qualified = kernel;
    } else if (contains(names, entry)) {
      if (plain.empty()) plain = entry;
    } else if (!contains(kKernelNames, entry)) {
      throw Error(quoted + " names no kernel of " + std::string(family) +
                  " (available: " + join(names) + ") nor of any other family");
    }
  }
  return qualified.empty() ? plain : qualified;
}

namespace {

struct ThreadScratch {
  AlignedBuffer buffer;
  uint64_t owner = 0;  // the last call's, 0 for the form without one
  size_t bytes = 0;    // the last call's request
};

thread_local ThreadScratch scratch;

}  // namespace

uint8_t* thread_scratch(size_t bytes) { return thread_scratch(bytes, 0, nullptr); }

uint8_t* thread_scratch(size_t bytes, uint64_t owner, bool* kept) {
  ThreadScratch& s = scratch;
  const bool same = owner != 0 && s.owner == owner && s.bytes == bytes;
  // Grown at least twofold: attention's scratch grows with the context, a little every decode
  // step, and should not be reallocated every step.
  if (s.buffer.size() < bytes) s.buffer = AlignedBuffer(std::max(bytes, 2 * s.buffer.size()));
  s.owner = owner;
  s.bytes = bytes;
  if (kept != nullptr) *kept = same;
  return s.buffer.data();
}

std::string unsupported_reason(const char* name, const char* needs) {
  // AMX may be on the CPU yet refused by the OS: say which.
  const std::string amx = std::string_view(needs).find("amx") != std::string_view::npos
                              ? "; AMX: " + cpu_features().amx_status
                              : "";
  return std::string("kernel '") + name + "' needs " + needs +
         ", which this CPU lacks (it has: " + cpu_features().to_string() + ")" + amx;
}

// The checks build their messages only on failure: a valid call allocates nothing.
void check_matmul_args(std::string_view function, bool packed, int64_t n, int64_t k,
                       const MatmulArgs& a) {
  const auto fail = [&](const std::string& what) {
    throw Error(std::string(function) + ": " + what);
  };
  if (!packed) fail("weights are empty (not packed)");
  if (a.m <= 0) fail("m must be positive, got " + std::to_string(a.m));
  if (a.x == nullptr) fail("x is null");
  if (a.y == nullptr) fail("y is null");
  if (reinterpret_cast<uintptr_t>(a.x) % alignof(float) != 0) fail("x is not aligned to 4 bytes");
  if (a.ldx < k) fail("ldx " + std::to_string(a.ldx) + " is smaller than k " + std::to_string(k));
  check_output_args(function, packed, n, a);
}

void check_output_args(std::string_view function, bool packed, int64_t n, const MatmulArgs& a) {
  const auto fail = [&](const std::string& what) {
    throw Error(std::string(function) + ": " + what);
  };
  if (!packed) fail("weights are empty (not packed)");
  if (a.m <= 0) fail("m must be positive, got " + std::to_string(a.m));
  if (a.y == nullptr) fail("y is null");
  if (reinterpret_cast<uintptr_t>(a.y) % alignof(float) != 0) fail("y is not aligned to 4 bytes");
  if (a.ldy < n) fail("ldy " + std::to_string(a.ldy) + " is smaller than n " + std::to_string(n));
  if (std::isnan(a.min) || std::isnan(a.max) || a.min > a.max)
    fail("clamp range [" + std::to_string(a.min) + ", " + std::to_string(a.max) + "] is invalid");
  if (a.max_threads < 0) fail("max_threads must be >= 0, got " + std::to_string(a.max_threads));
}

}  // namespace dq4::kernels

namespace dq4 {

TileSplit TileSplit::of(int64_t m, int64_t panels, int threads, int64_t row_block) {
  TileSplit s;
  s.m = m;
  s.panels = panels;
  s.row_block = row_block;
  s.row_tiles = (m + row_block - 1) / row_block;
  const int64_t want_tiles = threads == 1 ? 1 : int64_t{4} * threads;
  s.panel_tiles = std::clamp<int64_t>((want_tiles + s.row_tiles - 1) / s.row_tiles, 1, panels);
  return s;
}

}  // namespace dq4
