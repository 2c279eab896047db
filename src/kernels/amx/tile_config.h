#pragma once
// The 64-byte tile configuration LDTILECFG reads (Intel SDM, "LDTILECFG"): palette 1 gives 8 tiles
// of at most 16 rows of at most 64 bytes. Shared by the tile model and the real instructions.

#include <cstdint>

namespace dq4::amx {

constexpr int kTiles = 8;            // palette 1: tmm0..tmm7
constexpr int kMaxRows = 16;         // palette 1: rows per tile
constexpr int kMaxColumnBytes = 64;  // palette 1: bytes per row

struct alignas(64) TileConfig {
  uint8_t palette = 0;  // 1: AMX; 0: the INIT state (tiles released)
  uint8_t start_row = 0;
  uint8_t reserved0[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of tmm0..tmm7; 8..15 reserved
  uint8_t rows[16] = {};    // rows of tmm0..tmm7; 8..15 reserved

  // Tile t as `rows` x `colsb` (palette 1).
  void set(int t, int tile_rows, int tile_colsb) {
    palette = 1;
    rows[t] = static_cast<uint8_t>(tile_rows);
    colsb[t] = static_cast<uint16_t>(tile_colsb);
  }
};
static_assert(sizeof(TileConfig) == 64, "LDTILECFG reads 64 bytes");

}  // namespace dq4::amx
