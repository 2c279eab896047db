// W4A8 on AVX512-VNNI for cores that run 512-bit operations as two 256-bit halves (AMD Zen 4).
// There the nibble unpack issues beside VPDPBUSD instead of competing for its ports, so every call
// runs 64-column tiles that unpack in their loop and stream the whole panel, a few rows at a time:
// the first tile reads the panel from memory, the others find it in L2. On such a core this beats
// the chunked 8 x 32 decode batches and the unpacked prefill of `avx512_vnni` at every M from 6,
// and the tiles run without software prefetch, which there only slows the hardware prefetchers'
// streams (docs/kernels.md).

#include "x86_zmm_w4a8.h"

namespace dq4::w4a8 {
namespace {

using namespace zmm;

// Rows per tile when a call has more than one tile's worth: 4 x 64 tiles measured faster than
// 5 x 64 at G = 32 (16 accumulators leave registers for the group epilogue).
constexpr int64_t kRowsPerTile = 4;

void run(const Layout& l, const uint8_t* packed, const QuantizedLhs& lhs, int64_t m0, int64_t m1,
         int64_t p0, int64_t p1, float* y, int64_t ldy, kernels::Epilogue e, uint8_t*) {
  for (int64_t p = p0; p < p1; ++p) {
    const PanelView panel = panel_view(packed, l, p);
    for (int64_t m = m0; m < m1;) {
      const int64_t rows = m1 - m <= kStreamedRows ? m1 - m : kRowsPerTile;
      tile_rows<kStreamedRows, kVectors, 0>(l, panel, nullptr, lhs, m, rows, y, ldy, p * kNr, e);
      m += rows;
    }
  }
}

bool preferred(const CpuFeatures& f) { return f.avx512_halves; }

}  // namespace

extern const Kernel kAvx512VnniZen4Kernel = {.name = "avx512_vnni_zen4",
                                             .variant = "qai8dx_qsi4_f32_avx512vnnizen4_4x64",
                                             .needs = "avx512f+avx512bw+avx512vl+avx512_vnni",
                                             .nr = kNr,
                                             .supported = zmm::supported,
                                             .quantize = zmm::quantize,
                                             .run = run,
                                             .preferred = preferred};

}  // namespace dq4::w4a8
