#pragma once
// A software model of the AMX tile unit as far as dq4 uses it, from the Intel SDM's pseudocode:
// LDTILECFG (palette 1: 8 tiles, rows <= 16, colsb <= 64; palette 0 releases), TILELOADD,
// TILESTORED, TILEZERO and the int8 dot products TDPBSSD/TDPBSUD/TDPBUSD/TDPBUUD (each int32
// element += four byte products, sign- or zero-extended per operand, wrapping). Every write of a
// tile zeroes its bytes beyond the configured rows and colsb. The faults the hardware raises are
// dq4::Error whose message starts "#GP" (an invalid configuration) or "#UD" (an instruction on
// unconfigured tiles or on shapes that do not fit); unlike the hardware, the model also refuses a
// tile configured with 0 rows, which dq4 never means to use.
//
// One unit per thread, as the hardware keeps the tile state per thread: TileModel::current().

#include <cstdint>

#include "tile_config.h"

namespace dq4::amx {

class TileModel {
 public:
  // The calling thread's unit (unconfigured until loadconfig()).
  static TileModel& current();

  // LDTILECFG from 64 bytes at `config`: validates, then zeroes every tile.
  void loadconfig(const void* config);
  // TILERELEASE: back to the INIT state.
  void release();
  // STTILECFG: the configuration in force (all zero when unconfigured).
  TileConfig config() const { return config_; }
  bool configured() const { return configured_; }

  void zero(int t);
  // TILELOADD: row r of tile t from base + r * stride, colsb bytes each.
  void load(int t, const void* base, int64_t stride);
  // TILESTORED: row r of tile t to base + r * stride, colsb bytes each.
  void store(int t, void* base, int64_t stride) const;
  // c += a . b with a's bytes signed (s) or unsigned (u), then b's: TDPB<a><b>D c, a, b.
  void dpbssd(int c, int a, int b) { dot<true, true>(c, a, b); }
  void dpbsud(int c, int a, int b) { dot<true, false>(c, a, b); }
  void dpbusd(int c, int a, int b) { dot<false, true>(c, a, b); }
  void dpbuud(int c, int a, int b) { dot<false, false>(c, a, b); }

  // The 16 x 64 bytes of tile t, unconfigured parts included (zero), for tests.
  const uint8_t* bytes(int t) const { return data_[t][0]; }

 private:
  template <bool kSignedA, bool kSignedB>
  void dot(int c, int a, int b);
  // #UD unless tile t is configured; returns it.
  int usable(int t, const char* instruction) const;

  bool configured_ = false;
  TileConfig config_;
  alignas(64) uint8_t data_[kTiles][kMaxRows][kMaxColumnBytes] = {};
};

}  // namespace dq4::amx
