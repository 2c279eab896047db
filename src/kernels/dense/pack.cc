// Validation of checkpoint weights and packing into the layout of layout.h.

#include <cmath>
#include <cstring>
#include <string>

#include "dq4/kernels/dense.h"
#include "dq4/kernels/error.h"
#include "dq4/kernels/half.h"
#include "dq4/kernels/thread_pool.h"
#include "kernel.h"

namespace dq4::dense {
namespace {

constexpr int64_t kMaxN = int64_t{1} << 31;
constexpr int64_t kMaxK = int64_t{1} << 24;  // keeps every size of the packed copy in int64

size_t element_bytes(WeightType type) { return type == WeightType::f32 ? 4 : 2; }

void validate(const WeightSource& s) {
  if (s.n <= 0) throw Error("dense::pack: n must be positive, got " + std::to_string(s.n));
  if (s.k <= 0) throw Error("dense::pack: k must be positive, got " + std::to_string(s.k));
  if (s.n > kMaxN)
    throw Error("dense::pack: n " + std::to_string(s.n) + " exceeds the supported maximum " +
                std::to_string(kMaxN));
  if (s.k > kMaxK)
    throw Error("dense::pack: k " + std::to_string(s.k) + " exceeds the supported maximum " +
                std::to_string(kMaxK));
  if (s.type != WeightType::f32 && s.type != WeightType::bf16 && s.type != WeightType::f16)
    throw Error("dense::pack: type " + std::to_string(static_cast<int>(s.type)) +
                " is not a weight type");
  if (s.data == nullptr) throw Error("dense::pack: data is null");
  const size_t align = element_bytes(s.type);
  if (reinterpret_cast<uintptr_t>(s.data) % align != 0)
    throw Error("dense::pack: data is not aligned to " + std::to_string(align) + " bytes");
  if (reinterpret_cast<uintptr_t>(s.bias) % alignof(float) != 0)
    throw Error("dense::pack: bias is not aligned to 4 bytes");
}

bool finite_bits(WeightType type, uint32_t bits) {
  switch (type) {
    case WeightType::bf16:
      return (bits & 0x7f80u) != 0x7f80u;
    case WeightType::f16:
      return (bits & 0x7c00u) != 0x7c00u;
    case WeightType::f32:
      return (bits & 0x7f800000u) != 0x7f800000u;
  }
  return false;
}

[[noreturn, gnu::noinline]] void throw_non_finite(const WeightSource& s, int64_t n) {
  for (int64_t k = 0; k < s.k; ++k) {
    uint32_t bits = 0;
    std::memcpy(&bits, static_cast<const uint8_t*>(s.data) + (n * s.k + k) * element_bytes(s.type),
                element_bytes(s.type));
    if (!finite_bits(s.type, bits))
      throw Error("dense::pack: data[" + std::to_string(n) + "][" + std::to_string(k) +
                  "] is not finite");
  }
  throw Error("dense::pack: row " + std::to_string(n) + " of data is not finite");
}

// Writes source row n as panel column c; the row is checked in the same pass.
void pack_column(const WeightSource& s, const Layout& l, uint8_t* panel, int64_t c, int64_t n) {
  uint8_t* out = panel + c * 4;
  bool finite = true;
  if (s.type == WeightType::bf16) {
    const uint16_t* row = static_cast<const uint16_t*>(s.data) + n * s.k;
    for (int64_t step = 0; step < l.steps; ++step, out += l.step_bytes) {
      const int64_t k = 2 * step;
      const uint32_t even = row[k], odd = k + 1 < s.k ? row[k + 1] : 0;
      finite &= finite_bits(s.type, even);
      finite &= finite_bits(s.type, odd);
      const uint32_t dword = even | odd << 16;
      std::memcpy(out, &dword, 4);
    }
  } else {
    for (int64_t k = 0; k < s.k; ++k, out += l.step_bytes) {
      float v;
      if (s.type == WeightType::f32) {
        v = static_cast<const float*>(s.data)[n * s.k + k];
      } else {
        v = f16_to_f32(static_cast<const uint16_t*>(s.data)[n * s.k + k]);
      }
      finite &= std::fabs(v) <= 3.4028235e38f;
      std::memcpy(out, &v, 4);
    }
  }
  if (!finite) throw_non_finite(s, n);
  const float bias = s.bias != nullptr ? s.bias[n] : 0.0f;
  if (!std::isfinite(bias))
    throw Error("dense::pack: bias[" + std::to_string(n) + "] is not finite");
  std::memcpy(panel + l.bias_offset + c * 4, &bias, 4);
}

}  // namespace

PackedWeights pack(const WeightSource& source, const Kernel& kernel, ThreadPool* pool) {
  validate(source);
  const Element element = source.type == WeightType::bf16 ? Element::bf16 : Element::f32;
  const Layout l = make_layout(source.n, source.k, element, kernel.nr);
  PackedWeights out;
  // A large buffer's zero pages are faulted in by the threads that pack them (aligned_buffer.h).
  out.data_ = AlignedBuffer(static_cast<size_t>(l.panels * l.panel_bytes));
  out.kernel_ = &kernel;
  out.n_ = source.n;
  out.k_ = source.k;
  out.element_ = element == Element::bf16 ? WeightType::bf16 : WeightType::f32;
  uint8_t* base = out.data_.data();
  ThreadPool& threads = pool != nullptr ? *pool : ThreadPool::global();
  threads.run(l.panels, [&](int64_t p) {
    for (int64_t c = 0; c < l.nr && p * l.nr + c < l.n; ++c)
      pack_column(source, l, base + p * l.panel_bytes, c, p * l.nr + c);
  });
  return out;
}

}  // namespace dq4::dense
