// Every family's variants are named twice: by ISA (`kernel_name`, what DQ4_ISA takes) and by what
// they compute (`variant_name`: <activations>_<weights>_<output>_<isa>_<tiles>,
// src/kernels/family.h). Both are unique within a family, the variant spells the family's types,
// then the ISA, then tiles.

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "dq4/kernels/attention.h"
#include "dq4/kernels/dense.h"
#include "dq4/kernels/w4a16.h"
#include "dq4/kernels/w4a8.h"

namespace dq4 {
namespace {

// The ISA as the variant spells it: the kernel name without underscores, "scalar" for the
// reference.
std::string isa_in_variant(std::string name) {
  if (name == "reference") return "scalar";
  std::erase(name, '_');
  return name;
}

template <class Kernel>
void expect_names(const std::vector<const Kernel*>& kernels,
                  std::string_view (*name)(const Kernel&),
                  std::string_view (*variant)(const Kernel&), const std::string& types) {
  ASSERT_FALSE(kernels.empty());
  std::set<std::string> names, variants;
  for (const Kernel* k : kernels) {
    const std::string n(name(*k)), v(variant(*k));
    EXPECT_TRUE(names.insert(n).second) << "duplicate kernel name " << n;
    EXPECT_TRUE(variants.insert(v).second) << "duplicate variant " << v;
    const std::regex pattern(types + "_" + isa_in_variant(n) +
                             "_(\\d+x\\d+(_\\d+x\\d+)*|\\d+rows?)");
    EXPECT_TRUE(std::regex_match(v, pattern))
        << n << ": " << v << " is not " << types << "_" << isa_in_variant(n) << "_<tiles>";
  }
}

TEST(KernelNames, W4a8VariantsSpellTypesIsaAndTiles) {
  expect_names(w4a8::compiled_kernels(), w4a8::kernel_name, w4a8::variant_name, "qai8dx_qsi4_f32");
}

TEST(KernelNames, W4a16VariantsSpellTypesIsaAndTiles) {
  expect_names(w4a16::compiled_kernels(), w4a16::kernel_name, w4a16::variant_name, "f32_qsi4_f32");
}

TEST(KernelNames, DenseVariantsSpellTypesIsaAndTiles) {
  // The exact variants read f32 activations; the opt-in ones round them to bf16 pairs.
  std::vector<const dense::Kernel*> exact, bf16;
  for (const dense::Kernel* k : dense::compiled_kernels())
    (dense::kernel_is_exact(*k) ? exact : bf16).push_back(k);
  expect_names(exact, dense::kernel_name, dense::variant_name, "f32_f32bf16_f32");
  expect_names(bf16, dense::kernel_name, dense::variant_name, "bf16_bf16_f32");
}

TEST(KernelNames, AttentionVariantsSpellTypesIsaAndTiles) {
  expect_names(attention::compiled_kernels(), attention::kernel_name, attention::variant_name,
               "f32_f32bf16kv_f32");
}

}  // namespace
}  // namespace dq4
