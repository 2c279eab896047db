// Every kernel family's matmul() checks its MatmulArgs the same way: a bad argument gives a
// dq4::Error naming the function, the field and the value, never UB; and every kernel this CPU
// runs refuses non-finite activations, also in the tail of its vector loops.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dq4/kernels/dense.h"
#include "dq4/kernels/error.h"
#include "dq4/kernels/w4a16.h"
#include "dq4/kernels/w4a8.h"
#include "expect_error.h"
#include "runnable_kernels.h"
#include "small_int4_weights.h"

namespace dq4::test {
namespace {

constexpr int64_t kN = 4, kK = 64;  // SmallInt4Weights' shape, used by every family
using Matmul = std::function<void(const MatmulArgs&)>;

// One family: its name in messages, matmul on [kN, kK] weights packed for the selected kernel and
// for each kernel this CPU supports, and matmul on empty PackedWeights.
struct Family {
  std::string name;
  Matmul selected;
  std::vector<Matmul> per_kernel;
  Matmul on_empty_weights;
};

template <class Packed>
Matmul bind(Packed packed, void (*matmul)(const Packed&, const MatmulArgs&)) {
  auto shared = std::make_shared<Packed>(std::move(packed));
  return [shared, matmul](const MatmulArgs& a) { matmul(*shared, a); };
}

Family w4a8_family() {
  const SmallInt4Weights weights;
  const auto s = weights.source();
  Family f{"w4a8::matmul", bind(w4a8::pack(s), w4a8::matmul), {}, [](const MatmulArgs& a) {
             w4a8::matmul(w4a8::PackedWeights(), a);
           }};
  for (const w4a8::Kernel* k : supported_here(w4a8::family()))
    f.per_kernel.push_back(bind(w4a8::pack(s, *k), w4a8::matmul));
  return f;
}

Family w4a16_family() {
  const SmallInt4Weights weights;
  const auto s = weights.source();
  Family f{"w4a16::matmul", bind(w4a16::pack(s), w4a16::matmul), {}, [](const MatmulArgs& a) {
             w4a16::matmul(w4a16::PackedWeights(), a);
           }};
  for (const w4a16::Kernel* k : supported_here(w4a16::family()))
    f.per_kernel.push_back(bind(w4a16::pack(s, *k), w4a16::matmul));
  return f;
}

Family dense_family(dense::WeightType type) {
  static const std::vector<uint16_t> bf16_ones(kN * kK, 0x3f80);
  static const std::vector<float> f32_ones(kN * kK, 1.0f);
  dense::WeightSource s;
  s.n = kN;
  s.k = kK;
  s.type = type;
  s.data = type == dense::WeightType::f32 ? static_cast<const void*>(f32_ones.data())
                                          : static_cast<const void*>(bf16_ones.data());
  Family f{"dense::matmul", bind(dense::pack(s), dense::matmul), {}, [](const MatmulArgs& a) {
             dense::matmul(dense::PackedWeights(), a);
           }};
  for (const dense::Kernel* k : supported_here(dense::family()))
    f.per_kernel.push_back(bind(dense::pack(s, *k), dense::matmul));
  return f;
}

std::vector<Family> families() {
  return {w4a8_family(), w4a16_family(), dense_family(dense::WeightType::bf16),
          dense_family(dense::WeightType::f32)};
}

template <class T>
T* misaligned(T* p, int bytes) {
  return reinterpret_cast<T*>(reinterpret_cast<uintptr_t>(p) + bytes);
}

TEST(MatmulArguments, EveryFamilyNamesTheBadField) {
  for (const Family& family : families()) {
    SCOPED_TRACE(family.name);
    const Matmul& matmul = family.selected;
    std::vector<float> x(4 * kK, 1.0f), y(4 * kN);
    MatmulArgs a;
    a.m = 2;
    a.x = x.data();
    a.ldx = kK;
    a.y = y.data();
    a.ldy = kN;
    auto with = [&](auto change) {
      MatmulArgs b = a;
      change(b);
      return [&matmul, b] { matmul(b); };
    };
    expect_error(with([](auto& b) { b.m = 0; }), {family.name, "m must be positive, got 0"});
    expect_error(with([](auto& b) { b.x = nullptr; }), {family.name, "x is null"});
    expect_error(with([](auto& b) { b.y = nullptr; }), "y is null");
    expect_error(with([](auto& b) { b.ldx = kK - 1; }), "ldx 63 is smaller than k 64");
    expect_error(with([](auto& b) { b.ldy = kN - 1; }), "ldy 3 is smaller than n 4");
    expect_error(with([](auto& b) { b.x = misaligned(b.x, 1); }), "x is not aligned");
    expect_error(with([](auto& b) { b.y = misaligned(b.y, 2); }), "y is not aligned");
    expect_error(with([](auto& b) {
                   b.min = 1;
                   b.max = 0;
                 }),
                 "clamp range");
    expect_error(with([](auto& b) { b.min = NAN; }), "clamp range");
    expect_error(with([](auto& b) { b.max = NAN; }), "clamp range");
    expect_error(with([](auto& b) { b.max_threads = -1; }), "max_threads must be >= 0, got -1");
    expect_error([&] { family.on_empty_weights(a); }, {family.name, "weights are empty"});
    x[kK + 5] = NAN;
    expect_error(with([](auto&) {}), "activation row 1 holds a NaN or infinite value");
    x[kK + 5] = 1.0f;
    x[kK - 1] = -INFINITY;
    expect_error(with([](auto&) {}), "activation row 0 holds a NaN or infinite value");
  }
}

TEST(MatmulArguments, EveryKernelRejectsNonFiniteActivations) {
  for (const Family& family : families()) {
    SCOPED_TRACE(family.name);
    ASSERT_GE(family.per_kernel.size(), 2u) << "no SIMD kernel runs on this CPU";
    std::vector<float> x(3 * kK, 0.25f), y(3 * kN);
    MatmulArgs a;
    a.m = 3;
    a.x = x.data();
    a.ldx = kK;
    a.y = y.data();
    a.ldy = kN;
    for (const float bad : {NAN, -INFINITY}) {
      x[2 * kK + kK - 1] = bad;  // the last element: the tail path of every vector loop
      for (const Matmul& matmul : family.per_kernel)
        expect_error([&] { matmul(a); }, "activation row 2");
    }
  }
}

}  // namespace
}  // namespace dq4::test
