#include "w4a16_test_support.h"

#include "matmul_case_args.h"
#include "runnable_kernels.h"

namespace dq4::test {

template <class Packed>
std::vector<float> run_w4a16_on(const Packed& packed, const W4A8Case& c, const W4A8Data& d,
                                ThreadPool& pool, const std::vector<float>* onto) {
  std::vector<float> y = case_output(c, d, onto);
  w4a16::matmul(packed, case_args(c, d, y, onto != nullptr, pool));
  return y;
}
template std::vector<float> run_w4a16_on(const w4a16::PackedWeights&, const W4A8Case&,
                                         const W4A8Data&, ThreadPool&, const std::vector<float>*);
template std::vector<float> run_w4a16_on(const w4a8::PackedWeights&, const W4A8Case&,
                                         const W4A8Data&, ThreadPool&, const std::vector<float>*);

std::vector<float> run_w4a16(const W4A8Case& c, const W4A8Data& d, const w4a16::Kernel& kernel,
                             ThreadPool& pool, const std::vector<float>* onto) {
  return run_w4a16_on(w4a16::pack(d.source(c), kernel, &pool), c, d, pool, onto);
}

std::vector<const w4a16::Kernel*> runnable_w4a16_kernels() {
  return supported_here(w4a16::family());
}

float source_scale(const W4A8Case& c, const W4A8Data& d, int64_t n, int64_t g) {
  const int64_t groups = c.group == 0 || c.group == c.k ? 1 : (c.k + c.group - 1) / c.group;
  const size_t i = static_cast<size_t>(n * groups + g);
  uint32_t bits = 0;
  switch (c.scale_type) {
    case int4::ScaleType::f32:
      return d.scales32[i];
    case int4::ScaleType::bf16:
      bits = uint32_t{d.scales16[i]} << 16;
      break;
    case int4::ScaleType::f16: {  // the generator makes normal values only
      const uint16_t h = d.scales16[i];
      bits = (uint32_t{h & 0x8000u} << 16) | ((((h >> 10) & 0x1fu) + 112) << 23) |
             (uint32_t{h & 0x3ffu} << 13);
      break;
    }
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace dq4::test
