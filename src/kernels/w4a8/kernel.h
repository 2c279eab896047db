#pragma once
// The descriptor every W4A8 variant fills in (one per ISA file), and the quantized-activation
// buffers its functions share. Kernels never allocate or start threads: matmul() splits the work
// into row ranges x panel ranges, calls `run` on each and owns the scratch it asks for.

#include <cstdint>

#include "../epilogue.h"
#include "../int4/layout.h"
#include "dq4/kernels/cpu_features.h"

namespace dq4::w4a8 {

using int4::GroupScales;
using int4::kMaxK;
using int4::Layout;
using int4::make_layout;
using int4::panel_view;
using int4::PanelView;
using int4::round_up;

// Activations quantized per row (qai8dx), in natural k order, each row zero-padded to kp.
struct QuantizedLhs {
  int8_t* q = nullptr;      // [m, kp]
  int64_t ldq = 0;          // = kp
  float* recip = nullptr;   // [m] (rmax - rmin) / 255 as KleidiAI computes it (1 / mul)
  int32_t* zp = nullptr;    // [m] nudged zero point
  int32_t* asum = nullptr;  // [m, groups] sum of q over each group (channelwise: over K)
  int64_t groups = 0;
  // [m, kp / 32]: per 32-k block, -8 sum q over the k with k % 4 < 2 (low int16) and over the
  // others (high int16): the correction of sum q u (u = w + 8) to sum q w, split as the two int16
  // lanes of each column's VPMADDUBSW pair sums hold it, so that those can start from it. Each
  // half is at most 8 x 16 x 128 = 16384 in magnitude, as is each lane's final sum q w. Written
  // by quantize() when its kernel says so (fills_lane_corrections); null when the activations
  // come from another quantizer, and the kernels then add the correction after widening.
  int32_t* block_lane_corrections = nullptr;
  // Whether the kernel's scratch still holds what this thread's previous run() left there for
  // the same rows of the same activations (the same matmul call): a kernel that lays the rows
  // out anew (the AMX tiles) may reuse that layout instead of copying them again.
  bool scratch_kept = false;
};

struct Kernel {
  const char* name;     // what DQ4_ISA calls it: the ISA
  const char* variant;  // what it computes: types, ISA, tiles (family.h)
  const char* needs;    // the CPU features it needs, for error messages
  int64_t nr;           // panel width of its packed layout
  bool (*supported)(const CpuFeatures&);
  // Quantizes rows [m0, m1) of x (row stride ldx). Returns the index of the first row holding a
  // non-finite value, or -1.
  int64_t (*quantize)(const float* x, int64_t ldx, int64_t m0, int64_t m1, const Layout& layout,
                      const QuantizedLhs& lhs);
  // y[m0..m1) x [columns of panels p0..p1) = clamp(epilogue(lhs . packed)), stored or added as
  // `out` says (../epilogue.h). `scratch` holds scratch_bytes(layout, m1 - m0) bytes, 64-byte
  // aligned, for this call alone (null when 0).
  void (*run)(const Layout& layout, const uint8_t* packed, const QuantizedLhs& lhs, int64_t m0,
              int64_t m1, int64_t p0, int64_t p1, float* y, int64_t ldy, kernels::Epilogue out,
              uint8_t* scratch);
  // Bytes of scratch run() wants for `rows` rows; null: none.
  int64_t (*scratch_bytes)(const Layout& layout, int64_t rows) = nullptr;
  // Whether quantize() writes QuantizedLhs::block_lane_corrections (from sums it has at hand).
  // The kernels that read them (avx2 at group 32) are among these.
  bool fills_lane_corrections = false;
  // False: chosen only by name (DQ4_ISA), never automatically (the tile model, kept for tests).
  bool automatic = true;
  // Where set, the automatic choice takes this kernel only on CPUs it returns true for (a variant
  // tuned for one kind of core); chosen by name it runs wherever `supported` allows.
  bool (*preferred)(const CpuFeatures&) = nullptr;
};

// The block_lane_corrections dword of one 32-k block: the sums of q over the block and over its
// k with k % 4 >= 2.
inline int32_t lane_correction(int32_t block_sum, int32_t high_sum) {
  return static_cast<int32_t>(static_cast<uint16_t>(-8 * (block_sum - high_sum)) |
                              static_cast<uint32_t>(-8 * high_sum) << 16);
}

}  // namespace dq4::w4a8
