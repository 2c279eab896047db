// The amx kernel's tile code on the software model of the tile unit (../amx/tile_model.h): the
// `amx_model` variant, chosen only by name (DQ4_ISA=amx_model), so that the tile-level kernel runs
// and is tested bit for bit on any x86 host, AMX or not. Slow: every TDPBSSD is 16K scalar
// multiply-adds. Built for the baseline ISA like the reference.

#include "../amx/tile_model.h"
#include "amx_w4a8.h"

namespace dq4::w4a8 {

extern const Kernel kReferenceKernel;

namespace {

struct ModelTiles {
  static void configure(const amx::TileConfig& c) { amx::TileModel::current().loadconfig(&c); }
  static amx::TileConfig config() { return amx::TileModel::current().config(); }
  template <int T>
  static void zero() {
    amx::TileModel::current().zero(T);
  }
  template <int T>
  static void load(const void* base, int64_t stride) {
    amx::TileModel::current().load(T, base, stride);
  }
  template <int T>
  static void store(void* base, int64_t stride) {
    amx::TileModel::current().store(T, base, stride);
  }
  template <int C, int A, int B>
  static void dpbssd() {
    amx::TileModel::current().dpbssd(C, A, B);
  }
};

// Every row count runs on the tiles: the model exists to test them.
constexpr int64_t kMinRows = 1;

int64_t quantize(const float* x, int64_t ldx, int64_t m0, int64_t m1, const Layout& l,
                 const QuantizedLhs& lhs) {
  return kReferenceKernel.quantize(x, ldx, m0, m1, l, lhs);
}

void run(const Layout& l, const uint8_t* packed, const QuantizedLhs& lhs, int64_t m0, int64_t m1,
         int64_t p0, int64_t p1, float* y, int64_t ldy, kernels::Epilogue e, uint8_t* scratch) {
  if (!amx_w4a8::on_tiles(l, m1 - m0, kMinRows))
    return kReferenceKernel.run(l, packed, lhs, m0, m1, p0, p1, y, ldy, e, scratch);
  amx_w4a8::run_tiles<ModelTiles, amx_w4a8::ScalarSimd>(l, packed, lhs, m0, m1, p0, p1, y, ldy, e,
                                                        scratch);
}

int64_t scratch_bytes(const Layout& l, int64_t rows) {
  return amx_w4a8::on_tiles(l, rows, kMinRows) ? amx_w4a8::scratch_size(l, rows) : 0;
}

bool supported(const CpuFeatures&) { return true; }

}  // namespace

extern const Kernel kAmxModelKernel = {"amx_model", "qai8dx_qsi4_f32_amxmodel_32x32",
                                       "nothing",   amx_w4a8::kNr,
                                       supported,   quantize,
                                       run,         scratch_bytes,
                                       false,       false};

}  // namespace dq4::w4a8
