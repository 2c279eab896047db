#pragma once
// Test-only: tiny synthetic checkpoints (`dq4 synth` presets) written to scratch directories.

#include <string>

#include "safetensors_writer.h"

namespace dq4::test {

// A synthetic model of `preset` in F32 under `scratch`; its directory.
std::string synth_f32(const ScratchDir& scratch, const std::string& preset);

}  // namespace dq4::test
