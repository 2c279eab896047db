// Validation of checkpoint int4 weights and packing into the layout of layout.h (for W4A8 and
// W4A16).

#include "pack.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "dq4/kernels/error.h"
#include "dq4/kernels/half.h"
#include "dq4/kernels/int4.h"
#include "dq4/kernels/thread_pool.h"
#include "layout.h"

namespace dq4::int4 {

namespace {

std::string where(const char* field, int64_t row, int64_t col) {
  return std::string(field) + "[" + std::to_string(row) + "][" + std::to_string(col) + "]";
}

void check_aligned(const char* who, const void* p, size_t alignment, const char* field) {
  if (reinterpret_cast<uintptr_t>(p) % alignment != 0)
    throw Error(std::string(who) + ": " + field + " is not aligned to " +
                std::to_string(alignment) + " bytes");
}

// Returns the normalised group size: 0 for channelwise.
int64_t validate(const WeightSource& s, const char* who) {
  const std::string at = std::string(who) + ": ";
  if (s.n <= 0) throw Error(at + "n must be positive, got " + std::to_string(s.n));
  if (s.k <= 0) throw Error(at + "k must be positive, got " + std::to_string(s.k));
  if (s.k > kMaxK)
    throw Error(at + "k " + std::to_string(s.k) + " exceeds the supported maximum " +
                std::to_string(kMaxK));
  if (s.group_size < 0)
    throw Error(at + "group_size must be >= 0, got " + std::to_string(s.group_size));
  const int64_t group = s.group_size == s.k ? 0 : s.group_size;
  if (group != 0 && group % 32 != 0)
    throw Error(at + "group_size " + std::to_string(group) +
                " is not a multiple of 32 (nor equal to k " + std::to_string(s.k) + ")");
  if (group > s.k)
    throw Error(at + "group_size " + std::to_string(group) + " exceeds k " + std::to_string(s.k) +
                "; use channelwise (group_size 0)");
  if ((s.values == nullptr) == (s.packed == nullptr))
    throw Error(at + "give exactly one of values (int8) or packed (int32) weights");
  if (s.scales == nullptr) throw Error(at + "scales is null");
  check_aligned(who, s.packed, alignof(int32_t), "packed");
  check_aligned(who, s.scales, s.scale_type == ScaleType::f32 ? 4 : 2, "scales");
  check_aligned(who, s.bias, alignof(float), "bias");
  return group;
}

float read_scale(const WeightSource& s, int64_t index) {
  switch (s.scale_type) {
    case ScaleType::f32:
      return static_cast<const float*>(s.scales)[index];
    case ScaleType::bf16:
      return bf16_to_f32(static_cast<const uint16_t*>(s.scales)[index]);
    case ScaleType::f16:
      return f16_to_f32(static_cast<const uint16_t*>(s.scales)[index]);
  }
  return 0;
}

// Per-byte u = q + 8 of 8 int8 values without carries between bytes; valid iff every u <= 15.
inline uint64_t offset_nibbles(uint64_t x) {
  return ((x & 0x7f7f7f7f7f7f7f7full) + 0x0808080808080808ull) ^ (x & 0x8080808080808080ull);
}

// Byte i of the result holds nibble i | nibble (i + 4) << 4 of `word` (nibble i = u(k + i)):
// spread the eight nibbles over eight bytes, then fold the upper four bytes onto the lower four.
inline uint32_t interleave_word(uint32_t word) {
  uint64_t t = word;
  t = (t | (t << 16)) & 0x0000ffff0000ffffull;
  t = (t | (t << 8)) & 0x00ff00ff00ff00ffull;
  t = (t | (t << 4)) & 0x0f0f0f0f0f0f0f0full;
  return static_cast<uint32_t>(t) | (static_cast<uint32_t>(t >> 32) << 4);
}

// Sum of the eight nibbles of a packed step dword, minus 8 x 8: the sum of q over the step.
inline int32_t step_sum(uint32_t dword) {
  const uint32_t pairs = (dword & 0x0f0f0f0fu) + ((dword >> 4) & 0x0f0f0f0fu);
  return static_cast<int32_t>((pairs * 0x01010101u) >> 24) - 64;
}

[[noreturn, gnu::noinline]] void throw_bad_value(const char* who, const WeightSource& s, int64_t n,
                                                 int64_t k0) {
  const int8_t* row = s.values + n * s.k;
  for (int64_t k = k0; k < s.k; ++k)
    if (row[k] < -8 || row[k] > 7)
      throw Error(std::string(who) + ": " + where("values", n, k) + " = " + std::to_string(row[k]) +
                  " is outside the int4 range [-8, 7]");
  throw Error(std::string(who) + ": values of row " + std::to_string(n) + " are outside [-8, 7]");
}

// The packed dword for column n, k0..k0+7 (k0 a multiple of 8).
uint32_t source_step(const char* who, const WeightSource& s, int64_t n, int64_t k0) {
  if (s.values != nullptr) {
    const int8_t* row = s.values + n * s.k;
    if (k0 + 8 <= s.k) {
      uint64_t x;
      std::memcpy(&x, row + k0, 8);
      const uint64_t u = offset_nibbles(x);
      if ((u & 0xf0f0f0f0f0f0f0f0ull) != 0) throw_bad_value(who, s, n, k0);
      return static_cast<uint32_t>(u) | (static_cast<uint32_t>(u >> 32) << 4);
    }
    uint32_t word = 0;
    for (int64_t i = 0; i < 8; ++i) {
      int32_t q = 0;
      if (k0 + i < s.k) {
        q = row[k0 + i];
        if (q < -8 || q > 7) throw_bad_value(who, s, n, k0);
      }
      word |= static_cast<uint32_t>(q + 8) << (4 * i);
    }
    return interleave_word(word);
  }
  const int64_t words = (s.k + 7) / 8;
  if (k0 >= s.k) return 0x88888888u;
  uint32_t word = static_cast<uint32_t>(s.packed[n * words + k0 / 8]);
  const int64_t valid = std::min<int64_t>(8, s.k - k0);
  if (valid < 8) {  // the file pads with nibble 0 (q = -8): replace by q = 0
    const uint32_t keep = (uint32_t{1} << (4 * valid)) - 1;
    word = (word & keep) | (0x88888888u & ~keep);
  }
  return interleave_word(word);
}

// The four step dwords of the 32-k chunk at k0 (a multiple of 32) for column n.
inline void source_chunk(const char* who, const WeightSource& s, int64_t n, int64_t k0,
                         uint32_t (&dwords)[4]) {
  if (s.values != nullptr && k0 + 32 <= s.k) {  // the common case, without per-step branches
    uint64_t x[4], bad = 0;
    std::memcpy(x, s.values + n * s.k + k0, 32);
    for (int i = 0; i < 4; ++i) {
      const uint64_t u = offset_nibbles(x[i]);
      bad |= u;
      dwords[i] = static_cast<uint32_t>(u) | (static_cast<uint32_t>(u >> 32) << 4);
    }
    if ((bad & 0xf0f0f0f0f0f0f0f0ull) != 0) throw_bad_value(who, s, n, k0);
    return;
  }
  if (s.packed != nullptr && k0 + 32 <= s.k) {
    const int32_t* words = s.packed + n * ((s.k + 7) / 8) + k0 / 8;
    for (int i = 0; i < 4; ++i) dwords[i] = interleave_word(static_cast<uint32_t>(words[i]));
    return;
  }
  for (int i = 0; i < 4; ++i) dwords[i] = source_step(who, s, n, k0 + 8 * i);  // the row's tail
}

void pack_column(const char* who, const WeightSource& s, const Layout& l, uint8_t* panel, int64_t c,
                 int64_t n) {
  const std::string at = std::string(who) + ": ";
  int64_t column_sum = 0;
  float row_sum = 0.0f;  // KleidiAI's R_n (groupwise)
  const int64_t groups_in_scales = l.channelwise ? 1 : l.groups;
  for (int64_t g = 0; g < l.groups; ++g) {
    uint8_t* group_data = panel + g * l.group_stride;
    const int64_t steps = l.group_steps(g);
    float scale = 0;
    if (!l.channelwise) {
      scale = read_scale(s, n * groups_in_scales + g);
      if (!std::isfinite(scale)) throw Error(at + where("scales", n, g) + " is not finite");
      if (l.group_scales == GroupScales::f32) {
        std::memcpy(group_data + steps * l.step_bytes + c * 4, &scale, 4);
      } else {
        const uint16_t bf16 = f32_to_bf16(scale);
        scale = bf16_to_f32(bf16);
        if (!std::isfinite(scale)) throw Error(at + where("scales", n, g) + " overflows bf16");
        std::memcpy(group_data + steps * l.step_bytes + c * 2, &bf16, 2);
      }
    }
    for (int64_t step = 0; step < steps; step += 4) {
      uint32_t dwords[4];
      source_chunk(who, s, n, l.group_begin(g) + step * 8, dwords);
      int32_t sums[4];
      for (int i = 0; i < 4; ++i) {
        std::memcpy(group_data + (step + i) * l.step_bytes + c * 4, &dwords[i], 4);
        sums[i] = step_sum(dwords[i]);
      }
      column_sum += sums[0] + sums[1] + sums[2] + sums[3];
      if (!l.channelwise) {
        // KleidiAI sums each 32-k chunk as {k..k+7, k+16..k+23} then {k+8..k+15, k+24..k+31}.
        row_sum = row_sum + static_cast<float>(sums[0] + sums[2]) * scale;
        row_sum = row_sum + static_cast<float>(sums[1] + sums[3]) * scale;
      }
    }
  }
  const float bias = s.bias != nullptr ? s.bias[n] : 0.0f;
  if (!std::isfinite(bias)) throw Error(at + "bias[" + std::to_string(n) + "] is not finite");
  PanelView view = panel_view(panel, l, 0);
  auto put = [&](const void* field, const void* value) {
    std::memcpy(const_cast<void*>(field), value, 4);
  };
  if (l.channelwise) {
    const float scale = read_scale(s, n);
    if (!std::isfinite(scale)) throw Error(at + where("scales", n, 0) + " is not finite");
    const int32_t sum = static_cast<int32_t>(column_sum);
    put(view.scales() + c, &scale);
    put(view.column_sums() + c, &sum);
    put(view.cw_bias() + c, &bias);
  } else {
    put(view.row_sums() + c, &row_sum);
    put(view.gw_bias() + c, &bias);
  }
}

void fill_padding_column(const Layout& l, uint8_t* panel, int64_t c) {
  for (int64_t g = 0; g < l.groups; ++g)
    for (int64_t step = 0; step < l.group_steps(g); ++step)
      std::memset(panel + g * l.group_stride + step * l.step_bytes + c * 4, 0x88, 4);
}

}  // namespace

PackedPanels pack_panels(const WeightSource& source, int64_t nr, GroupScales scales,
                         ThreadPool& pool, const char* who) {
  PackedPanels out;
  out.group_size = validate(source, who);
  const Layout l = make_layout(source.n, source.k, out.group_size, nr, scales);
  // A large buffer's zero pages are faulted in by the threads that pack them (aligned_buffer.h).
  out.data = AlignedBuffer(static_cast<size_t>(l.panels * l.panel_bytes));
  uint8_t* base = out.data.data();
  pool.run(l.panels, [&](int64_t p) {
    uint8_t* panel = base + p * l.panel_bytes;
    for (int64_t c = 0; c < l.nr; ++c) {
      const int64_t n = p * l.nr + c;
      if (n < l.n)
        pack_column(who, source, l, panel, c, n);
      else
        fill_padding_column(l, panel, c);
    }
  });
  return out;
}

}  // namespace dq4::int4
