#include "tile_model.h"

#include <cstring>
#include <string>

#include "dq4/kernels/error.h"

namespace dq4::amx {
namespace {

[[noreturn]] void fault(const char* kind, const char* instruction, const std::string& why) {
  throw Error(std::string(kind) + " in " + instruction + ": " + why);
}

std::string tile_name(int t) { return "tmm" + std::to_string(t); }

int32_t extend(uint8_t byte, bool is_signed) {
  return is_signed ? static_cast<int32_t>(static_cast<int8_t>(byte)) : static_cast<int32_t>(byte);
}

}  // namespace

TileModel& TileModel::current() {
  thread_local TileModel unit;
  return unit;
}

void TileModel::loadconfig(const void* memory) {
  TileConfig c;
  std::memcpy(&c, memory, sizeof c);
  if (c.palette == 0) return release();
  if (c.palette != 1)
    fault("#GP", "LDTILECFG", "palette " + std::to_string(c.palette) + " (only 1 exists)");
  for (uint8_t byte : c.reserved0)
    if (byte != 0) fault("#GP", "LDTILECFG", "reserved bytes 2..15 are not zero");
  for (int t = 0; t < 16; ++t) {
    const bool beyond = t >= kTiles;
    if (beyond && (c.colsb[t] != 0 || c.rows[t] != 0))
      fault("#GP", "LDTILECFG", "tile " + std::to_string(t) + " is configured; palette 1 has 8");
    if (c.rows[t] > kMaxRows)
      fault("#GP", "LDTILECFG", tile_name(t) + " has " + std::to_string(c.rows[t]) + " rows > 16");
    if (c.colsb[t] > kMaxColumnBytes)
      fault("#GP", "LDTILECFG",
            tile_name(t) + " has " + std::to_string(c.colsb[t]) + " bytes per row > 64");
    if ((c.rows[t] == 0) != (c.colsb[t] == 0))
      fault("#GP", "LDTILECFG", tile_name(t) + " has rows or bytes per row zero, not both");
  }
  if (c.start_row != 0)
    fault("#GP", "LDTILECFG",
          "start_row is " + std::to_string(c.start_row) + "; dq4 never restarts");
  config_ = c;
  configured_ = true;
  std::memset(data_, 0, sizeof data_);
}

void TileModel::release() {
  config_ = TileConfig();
  configured_ = false;
  std::memset(data_, 0, sizeof data_);
}

int TileModel::usable(int t, const char* instruction) const {
  if (!configured_) fault("#UD", instruction, "tiles are not configured (no LDTILECFG)");
  if (t < 0 || t >= kTiles) fault("#UD", instruction, "no tile " + std::to_string(t));
  if (config_.rows[t] == 0) fault("#UD", instruction, tile_name(t) + " is not configured");
  return t;
}

void TileModel::zero(int t) { std::memset(data_[usable(t, "TILEZERO")], 0, sizeof data_[t]); }

void TileModel::load(int t, const void* base, int64_t stride) {
  usable(t, "TILELOADD");
  std::memset(data_[t], 0, sizeof data_[t]);
  const auto* src = static_cast<const uint8_t*>(base);
  for (int r = 0; r < config_.rows[t]; ++r)
    std::memcpy(data_[t][r], src + r * stride, config_.colsb[t]);
}

void TileModel::store(int t, void* base, int64_t stride) const {
  usable(t, "TILESTORED");
  auto* dst = static_cast<uint8_t*>(base);
  for (int r = 0; r < config_.rows[t]; ++r)
    std::memcpy(dst + r * stride, data_[t][r], config_.colsb[t]);
}

template <bool kSignedA, bool kSignedB>
void TileModel::dot(int c, int a, int b) {
  const char* name =
      kSignedA ? (kSignedB ? "TDPBSSD" : "TDPBSUD") : (kSignedB ? "TDPBUSD" : "TDPBUUD");
  usable(c, name);
  usable(a, name);
  usable(b, name);
  if (c == a || c == b || a == b) fault("#UD", name, "the three tiles are not distinct");
  const int rows = config_.rows[c], c_colsb = config_.colsb[c], a_colsb = config_.colsb[a];
  if (c_colsb % 4 != 0 || a_colsb % 4 != 0 || config_.colsb[b] % 4 != 0)
    fault("#UD", name, "bytes per row not a multiple of 4");
  if (config_.rows[a] != rows)
    fault("#UD", name, "the destination's rows differ from the first source's");
  if (config_.rows[b] != a_colsb / 4)
    fault("#UD", name, "the second source's rows differ from the first source's dwords per row");
  if (config_.colsb[b] != c_colsb)
    fault("#UD", name, "the destination's bytes per row differ from the second source's");
  for (int m = 0; m < rows; ++m) {
    uint32_t row[kMaxColumnBytes / 4];
    std::memcpy(row, data_[c][m], sizeof row);
    for (int k = 0; k < a_colsb / 4; ++k)
      for (int n = 0; n < c_colsb / 4; ++n) {
        // Unsigned arithmetic: the int32 sums wrap, as the hardware's do.
        uint32_t sum = row[n];
        for (int i = 0; i < 4; ++i)
          sum += static_cast<uint32_t>(extend(data_[a][m][4 * k + i], kSignedA) *
                                       extend(data_[b][k][4 * n + i], kSignedB));
        row[n] = sum;
      }
    std::memset(data_[c][m], 0, kMaxColumnBytes);
    std::memcpy(data_[c][m], row, c_colsb);
  }
  for (int m = rows; m < kMaxRows; ++m) std::memset(data_[c][m], 0, kMaxColumnBytes);
}

template void TileModel::dot<true, true>(int, int, int);
template void TileModel::dot<true, false>(int, int, int);
template void TileModel::dot<false, true>(int, int, int);
template void TileModel::dot<false, false>(int, int, int);

}  // namespace dq4::amx
