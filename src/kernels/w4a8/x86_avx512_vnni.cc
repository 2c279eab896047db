// W4A8 on AVX512-VNNI as measured fastest on Intel Xeons (where VPDPBUSD shares its ports with the
// nibble unpack) and Zen 5: tiles that load each unpacked vector once for many VPDPBUSD. Decode
// streams one tile over each panel, decode batches run K a chunk at a time, prefill unpacks each
// panel once into scratch.

#include "x86_zmm_w4a8.h"

namespace dq4::w4a8 {
namespace {

using namespace zmm;

// Decode streams weights from DRAM once, prefetching this many bytes ahead: enough lines in flight
// for one core to approach the memory bandwidth, and few enough that the prefetches waiting on
// memory do not hold up the loads of the lines already there. Decode batches take longer per
// byte and prefetch further. Prefill re-reads panels from L2 and skips it.
constexpr int kDecodeAhead = 1536;
constexpr int kBatchAhead = 4096;

// Splits a panel's nibbles into low and high planes (steps x [lo 4 nr bytes][hi 4 nr bytes]) so
// that prefill tiles, which each read the whole panel, skip the unpack.
void unpack_panel(const Layout& l, const PanelView& panel, uint8_t* out) {
  const __m512i low_mask = _mm512_set1_epi8(0x0f);
  for (int64_t g = 0; g < l.groups; ++g) {
    const uint8_t* w = panel.group_data(g);
    for (int64_t s = 0; s < l.group_steps(g); ++s, w += kNr * 4, out += kNr * 8) {
      for (int j = 0; j < kVectors; ++j) {
        const __m512i raw = _mm512_load_si512(w + 64 * j);
        _mm512_store_si512(out + 64 * j, _mm512_and_si512(raw, low_mask));
        _mm512_store_si512(out + kNr * 4 + 64 * j,
                           _mm512_and_si512(_mm512_srli_epi16(raw, 4), low_mask));
      }
    }
  }
}

// Prefill unpacks each panel once into scratch when its planes fit this bound (K <= 32768).
constexpr int64_t kMaxUnpackedBytes = int64_t{2} << 20;

int64_t unpacked_bytes(const Layout& l) { return l.panel_steps() * kNr * 8; }

// Calls of more rows, up to kBatchRows (decode batches, short prompts, a mixture's experts), run
// 8 x 32 tiles (each unpacked vector feeds 8 VPDPBUSD: the unpack shares its ports with VPDPBUSD
// on Intel cores) a chunk of K at a time, every row's tiles over one chunk before the next, their
// sums waiting in L1 between chunks: the chunk is read from memory once, and its prefetch
// overlaps the arithmetic of all the rows. Past kBatchRows, unpacking each panel once into
// scratch saves more than the overlap.
constexpr int64_t kBatchRows = 48;
// Steps of 8 k per chunk: the batch tiles' prefetch distance, so that one chunk's tiles fetch
// the next.
constexpr int64_t kChunkSteps = kBatchAhead / (kNr * 4);

int64_t scratch_bytes(const Layout& l, int64_t rows) {
  const int64_t bytes = unpacked_bytes(l);
  return rows > kBatchRows && bytes <= kMaxUnpackedBytes ? bytes : 0;
}

// Prefill tiles re-read a panel from L2 for every group of rows. VPDPBUSD shares its execution
// ports with the nibble unpack, so the panel is unpacked into scratch once (unpack_panel) when it
// fits, and tiles load ready planes. Tall tiles (8 rows x 32 columns: each unpacked vector feeds 8
// VPDPBUSD, half the plane loads of 4 x 64) for every group size: on Zen 5 they beat 4 x 64 at
// G = 32 too, where a Xeon favoured the wider tile's shared epilogue (docs/kernels.md); 12 x 32
// or 16 x 16 spill.
// The prefill tiles of rows [m0, m1) over one panel, from its nibbles or (kUnpacked) its planes.
template <bool kUnpacked>
void prefill_panel(const Layout& l, const PanelView& panel, const uint8_t* unpacked,
                   const QuantizedLhs& lhs, int64_t m0, int64_t m1, float* y, int64_t ldy,
                   int64_t n0, kernels::Epilogue e) {
  for (int64_t m = m0; m < m1; m += 8)
    tile_rows<8, 2, 0, kUnpacked>(l, panel, unpacked, lhs, m, std::min<int64_t>(8, m1 - m), y, ldy,
                                  n0, e);
}

// f(integral_constant rows, integral_constant vectors, c0) for the tiles of one row block of a
// decode batch: 8 x 32 tiles, or for a block of at most kStreamedRows rows one 64-column tile
// (each unpacked vector then feeds as many VPDPBUSD as the rows allow).
template <class F>
void batch_block_tiles(const Layout& l, int64_t rows, int64_t n0, F&& f) {
  with_rows<8>(rows, [&](auto r) {
    constexpr int kRows = decltype(r)::value;
    constexpr int kVectorsPerTile = kRows <= kStreamedRows ? kVectors : 2;
    for (int64_t c0 = 0; c0 < kNr && n0 + c0 < l.n; c0 += 16 * kVectorsPerTile)
      f(r, std::integral_constant<int, kVectorsPerTile>(), c0);
  });
}

// A decode batch of more than kStreamedRows rows over one panel, K a chunk at a time. Every row
// block prefetches ahead: the later blocks' prefetches find the lines on their way, and keep the
// reads going while those blocks compute.
void batch_panel(const Layout& l, const PanelView& panel, const QuantizedLhs& lhs, int64_t m0,
                 int64_t m1, float* y, int64_t ldy, int64_t n0, kernels::Epilogue e) {
  alignas(64) int32_t buffer[kBatchRows * kNr];
  const int64_t parts = k_parts(l);
  const int64_t per_chunk =
      l.channelwise ? kChunkSteps : std::max<int64_t>(1, kChunkSteps / l.full_group_steps);
  const auto sums_of = [&](int64_t m, int64_t c0) {
    return TileSums{buffer + (m - m0) * kNr + c0, kNr};
  };
  for (int64_t part0 = 0; part0 < parts; part0 += per_chunk) {
    const int64_t part1 = std::min(parts, part0 + per_chunk);
    for (int64_t m = m0; m < m1; m += 8)
      batch_block_tiles(l, std::min<int64_t>(8, m1 - m), n0, [&](auto r, auto v, int64_t c0) {
        accumulate<decltype(r)::value, decltype(v)::value, kBatchAhead, false>(
            l, panel, nullptr, lhs, m, c0, part0, part1, part0 == 0, sums_of(m, c0));
      });
  }
  for (int64_t m = m0; m < m1; m += 8)
    batch_block_tiles(l, std::min<int64_t>(8, m1 - m), n0, [&](auto r, auto v, int64_t c0) {
      finish<decltype(r)::value, decltype(v)::value>(l, panel, lhs, m, c0, sums_of(m, c0), y, ldy,
                                                     n0, e);
    });
}

void run(const Layout& l, const uint8_t* packed, const QuantizedLhs& lhs, int64_t m0, int64_t m1,
         int64_t p0, int64_t p1, float* y, int64_t ldy, kernels::Epilogue e, uint8_t* scratch) {
  for (int64_t p = p0; p < p1; ++p) {
    const PanelView panel = panel_view(packed, l, p);
    const int64_t n0 = p * kNr;
    if (m1 - m0 <= kStreamedRows) {
      tile_rows<kStreamedRows, kVectors, kDecodeAhead>(l, panel, nullptr, lhs, m0, m1 - m0, y, ldy,
                                                       n0, e);
    } else if (m1 - m0 <= kBatchRows) {
      batch_panel(l, panel, lhs, m0, m1, y, ldy, n0, e);
    } else if (scratch != nullptr) {
      unpack_panel(l, panel, scratch);
      prefill_panel<true>(l, panel, scratch, lhs, m0, m1, y, ldy, n0, e);
    } else {
      prefill_panel<false>(l, panel, nullptr, lhs, m0, m1, y, ldy, n0, e);
    }
  }
}

}  // namespace

extern const Kernel kAvx512VnniKernel = {"avx512_vnni",
                                         "qai8dx_qsi4_f32_avx512vnni_5x64_8x32",
                                         "avx512f+avx512bw+avx512vl+avx512_vnni",
                                         kNr,
                                         zmm::supported,
                                         zmm::quantize,
                                         run,
                                         scratch_bytes};

}  // namespace dq4::w4a8
