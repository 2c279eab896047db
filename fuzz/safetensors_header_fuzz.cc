// libFuzzer target: arbitrary bytes as a whole safetensors file. Parsing must either succeed,
// with every tensor inside the input, or throw dq4::Error; never crash, hang or read out of bounds
// (ASan and UBSan watch).

#include <cstddef>
#include <cstdint>
#include <span>

#include "dq4/io/safetensors.h"
#include "dq4/kernels/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto file =
        dq4::SafetensorsFile::parse(std::span<const uint8_t>(data, size), "fuzz-input");
    volatile uint8_t sink = 0;
    for (const dq4::TensorView& t : file.tensors()) {
      if (file.find(t.name) != &t) __builtin_trap();
      if (t.bytes != 0) sink = sink + t.data[0] + t.data[t.bytes - 1];  // ASan checks both ends
      try {
        sink = sink + static_cast<uint8_t>(t.as<float>().size());
      } catch (const dq4::Error&) {
      }
    }
  } catch (const dq4::Error&) {
  }
  return 0;
}
