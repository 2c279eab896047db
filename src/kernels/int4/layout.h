#pragma once
// Packed-weight layout shared by every W4A8 and W4A16 kernel; only the panel width `nr` differs
// per ISA, so one packed copy serves both families (w4a16.h).
//
// Columns (output channels) come in panels of nr. A panel holds, for each group of K in order:
//   steps x [nr columns x 4 bytes]   one "step" covers 8 consecutive k; the 4 bytes of column c
//                                    hold u(k+i) in the low and u(k+4+i) in the high nibble
//                                    (i = 0..3), u = q + 8 in [0, 15]
//   nr bf16 scales                   (groupwise only; f32 when GroupScales::f32, see below)
// then a trailer:
//   channelwise: nr f32 scales, nr int32 column sums (sum of q over K), nr f32 biases
//   groupwise:   nr f32 row sums R (KleidiAI order, §5.2 of the math doc), nr f32 biases
// Groups are padded to a multiple of 32 k with q = 0 (u = 8); padded columns have q = 0, scale 0.
// W4A16 reads only the nibbles, the scales and the bias. W4A8 needs bf16 group scales (KleidiAI's
// qsi4c32p); W4A16 must use the checkpoint's scales exactly, so it packs f32 or f16 group scales
// as f32 (GroupScales::f32; W4A8 cannot run those) and bf16 ones as bf16 (byte-identical to W4A8).
// A low nibble plane (AND 0x0F) is then one u8 operand for a 4-byte dot with activations k..k+3,
// the high plane (shift 4, AND 0x0F) the one for k+4..k+7.

#include <cstdint>

// Small helpers shared by translation units compiled for different ISAs are always inlined, so
// that no out-of-line copy built with one ISA's flags can be linked into another's code.
#define DQ4_ALWAYS_INLINE inline __attribute__((always_inline))

namespace dq4::int4 {

constexpr int64_t kMaxK = int64_t{1} << 20;  // keeps every int32 sum exact (|U| <= 2040 K)

// How a panel stores its group scales (channelwise scales are always f32 in the trailer).
enum class GroupScales { bf16, f32 };

struct Layout {
  int64_t n = 0, k = 0;
  bool channelwise = true;
  int64_t group = 0;   // group length along K (k when channelwise)
  int64_t groups = 0;  // ceil(k / group)
  int64_t nr = 0;
  GroupScales group_scales = GroupScales::bf16;
  int64_t panels = 0;            // ceil(n / nr)
  int64_t kp = 0;                // k rounded up to 32: the quantized activation row length
  int64_t step_bytes = 0;        // nr * 4
  int64_t full_group_steps = 0;  // steps of 8 k in every group but the last
  int64_t last_group_steps = 0;
  int64_t group_stride = 0;  // bytes from one group's start to the next
  int64_t trailer_offset = 0;
  int64_t panel_bytes = 0;  // multiple of 64

  DQ4_ALWAYS_INLINE int64_t group_begin(int64_t g) const { return g * group; }
  DQ4_ALWAYS_INLINE int64_t group_end(int64_t g) const {
    return g + 1 == groups ? k : (g + 1) * group;
  }
  DQ4_ALWAYS_INLINE int64_t group_steps(int64_t g) const {
    return g + 1 == groups ? last_group_steps : full_group_steps;
  }
  // Steps of 8 k in a whole panel (every group's).
  DQ4_ALWAYS_INLINE int64_t panel_steps() const {
    return (groups - 1) * full_group_steps + last_group_steps;
  }
};

DQ4_ALWAYS_INLINE int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// group_size: 0 (channelwise) or a validated group length < k (groupwise).
DQ4_ALWAYS_INLINE Layout make_layout(int64_t n, int64_t k, int64_t group_size, int64_t nr,
                                     GroupScales group_scales = GroupScales::bf16) {
  Layout l;
  l.n = n;
  l.k = k;
  l.channelwise = group_size == 0;
  l.group = l.channelwise ? k : group_size;
  l.groups = (k + l.group - 1) / l.group;
  l.nr = nr;
  l.group_scales = group_scales;
  l.panels = (n + nr - 1) / nr;
  l.kp = round_up(k, 32);
  l.step_bytes = nr * 4;
  l.full_group_steps = l.channelwise ? l.kp / 8 : l.group / 8;
  l.last_group_steps = round_up(k - (l.groups - 1) * l.group, 32) / 8;
  const int64_t scale_bytes = l.channelwise ? 0 : nr * (group_scales == GroupScales::f32 ? 4 : 2);
  l.group_stride = l.full_group_steps * l.step_bytes + scale_bytes;
  l.trailer_offset =
      (l.groups - 1) * l.group_stride + l.last_group_steps * l.step_bytes + scale_bytes;
  const int64_t trailer_bytes = l.channelwise ? nr * 12 : nr * 8;
  l.panel_bytes = round_up(l.trailer_offset + trailer_bytes, 64);
  return l;
}

// Views into one panel.
struct PanelView {
  const uint8_t* base;
  const Layout* layout;

  DQ4_ALWAYS_INLINE const uint8_t* group_data(int64_t g) const {
    return base + g * layout->group_stride;
  }
  // Groupwise: the nr bf16 scales after group g's nibbles.
  DQ4_ALWAYS_INLINE const uint16_t* group_scales(int64_t g) const {
    return reinterpret_cast<const uint16_t*>(group_data(g) +
                                             layout->group_steps(g) * layout->step_bytes);
  }
  // The same place when the layout holds GroupScales::f32.
  DQ4_ALWAYS_INLINE const float* group_scales_f32(int64_t g) const {
    return reinterpret_cast<const float*>(group_scales(g));
  }
  DQ4_ALWAYS_INLINE const float* trailer_f32(int64_t index) const {
    return reinterpret_cast<const float*>(base + layout->trailer_offset) + index * layout->nr;
  }
  // Channelwise trailer
  DQ4_ALWAYS_INLINE const float* scales() const { return trailer_f32(0); }
  DQ4_ALWAYS_INLINE const int32_t* column_sums() const {
    return reinterpret_cast<const int32_t*>(trailer_f32(1));
  }
  DQ4_ALWAYS_INLINE const float* cw_bias() const { return trailer_f32(2); }
  // Groupwise trailer
  DQ4_ALWAYS_INLINE const float* row_sums() const { return trailer_f32(0); }
  DQ4_ALWAYS_INLINE const float* gw_bias() const { return trailer_f32(1); }
  DQ4_ALWAYS_INLINE const float* bias() const {
    return layout->channelwise ? cw_bias() : gw_bias();
  }
};

DQ4_ALWAYS_INLINE PanelView panel_view(const uint8_t* packed, const Layout& l, int64_t panel) {
  return PanelView{packed + panel * l.panel_bytes, &l};
}

}  // namespace dq4::int4
