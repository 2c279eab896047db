#include "synth_model.h"

#include "dq4/convert/synth.h"

namespace dq4::test {

std::string synth_f32(const ScratchDir& scratch, const std::string& preset) {
  SynthOptions o = synth_preset(preset);
  o.dtype = Dtype::F32;
  o.output_dir = scratch.file(preset);
  write_synthetic_model(o);
  return o.output_dir;
}

}  // namespace dq4::test
