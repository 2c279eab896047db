#pragma once
// The calling thread's tile configuration on the real unit (x86 only). GCC 12's _tile_loadconfig
// and _tile_storeconfig declare 8 of the 64 bytes they access, so the compiler could drop or delay
// stores the unit reads: both go through asm naming the whole struct.

#include <cstring>

#include "tile_config.h"

namespace dq4::amx {

inline void load_config(const TileConfig& c) { __asm__ volatile("ldtilecfg %0" ::"m"(c)); }

inline TileConfig held_config() {
  TileConfig c;
  __asm__ volatile("sttilecfg %0" : "=m"(c));
  return c;
}

// Loads `wanted` unless the thread's tiles hold it already: read back rather than remembered,
// since other tile code on the thread (another kernel, the bench's peak probe) may have
// reconfigured or released them.
inline void ensure_config(const TileConfig& wanted) {
  const TileConfig held = held_config();
  if (std::memcmp(&held, &wanted, sizeof wanted) != 0) load_config(wanted);
}

}  // namespace dq4::amx
