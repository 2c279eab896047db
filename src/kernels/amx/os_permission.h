#pragma once
// Linux hands AMX tile data (XFEATURE_XTILEDATA, 8 KiB of state per thread) to a process only on
// request: arch_prctl(ARCH_REQ_XCOMP_PERM) once per process, for all its threads, before any tile
// instruction (which otherwise faults).

#include <string>

namespace dq4::amx {

// Requests the permission; returns "" when granted, else why not (for `dq4 info`).
std::string request_tile_permission();

}  // namespace dq4::amx
