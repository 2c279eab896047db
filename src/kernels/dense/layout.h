#pragma once
// Packed-weight layout shared by every dense kernel; only the panel width `nr` differs per ISA.
//
// Columns (output channels) come in panels of nr. A panel holds `steps` steps, then nr f32
// biases, padded to a multiple of 64 bytes. A step is nr dwords, one per column:
//   bf16: a step covers k and k+1; the dword of column c is w[c][k] | w[c][k+1] << 16
//         (K odd: the last step's upper halves are 0)
//   f32:  a step covers one k; the dword of column c is w[c][k]
// So a vector load of L dwords gives L consecutive columns: for bf16, shifting each dword left
// by 16 widens w[.][k] exactly and masking the low half widens w[.][k+1], in natural column
// order; the same dword pairs are VDPBF16PS / BFDOT operands. Padded columns are 0 with bias 0.

#include <cstdint>

#include "dq4/kernels/dense.h"

// Small helpers shared by translation units compiled for different ISAs are always inlined, so
// that no out-of-line copy built with one ISA's flags can be linked into another's code.
#define DQ4_DENSE_INLINE inline __attribute__((always_inline))

namespace dq4::dense {

enum class Element { f32, bf16 };

struct Layout {
  int64_t n = 0, k = 0;
  Element element = Element::bf16;
  int64_t nr = 0;
  int64_t panels = 0;       // ceil(n / nr)
  int64_t steps = 0;        // ceil(k / 2) for bf16, k for f32
  int64_t step_bytes = 0;   // nr * 4
  int64_t bias_offset = 0;  // steps * step_bytes
  int64_t panel_bytes = 0;  // multiple of 64

  // The k each step covers: 2 for bf16, 1 for f32.
  DQ4_DENSE_INLINE int64_t step_k() const { return element == Element::bf16 ? 2 : 1; }
};

DQ4_DENSE_INLINE Layout make_layout(int64_t n, int64_t k, Element element, int64_t nr) {
  Layout l;
  l.n = n;
  l.k = k;
  l.element = element;
  l.nr = nr;
  l.panels = (n + nr - 1) / nr;
  l.steps = element == Element::bf16 ? (k + 1) / 2 : k;
  l.step_bytes = nr * 4;
  l.bias_offset = l.steps * l.step_bytes;
  l.panel_bytes = (l.bias_offset + nr * 4 + 63) / 64 * 64;
  return l;
}

DQ4_DENSE_INLINE const uint8_t* panel_at(const uint8_t* packed, const Layout& l, int64_t p) {
  return packed + p * l.panel_bytes;
}

DQ4_DENSE_INLINE const float* panel_bias(const uint8_t* panel, const Layout& l) {
  return reinterpret_cast<const float*>(panel + l.bias_offset);
}

}  // namespace dq4::dense
