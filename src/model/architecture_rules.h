#pragma once
// What the architecture's two files share: refusing a config.json field, and the rotary
// embeddings' settings (src/model/architecture_rope.cc).

#include <string>

#include "dq4/kernels/error.h"
#include "dq4/model/architecture.h"

namespace dq4::model {

// Throws dq4::Error naming the config file and the field.
[[noreturn]] inline void refuse(const std::string& file, const std::string& field,
                                const std::string& why) {
  throw Error(file + ": " + field + ": " + why);
}

// The rope variant of config.json's rope_scaling, its settings checked and applied to `a`: the
// rotated part of each head, yarn's ramp and attention factor, longrope's factors, and the context
// a scaling extends; throws naming the field for what dq4 does not run.
void check_rope(const ModelConfig& c, const std::string& file, Architecture& a);

}  // namespace dq4::model
