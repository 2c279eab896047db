// Every family's variants are named twice: by ISA (`name`, what DQ4_ISA takes) and by what they
// compute (`variant`: <activations>_<weights>_<output>_<isa>_<tiles>,
// dq4/kernels/kernel_family.h). Both are unique within a family, the variant spells the family's
// types, then the ISA, then tiles.

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

// `kernels`: some of `family`'s.
template <class Kernel>
void expect_names(const KernelFamily<Kernel>& family, const std::vector<const Kernel*>& kernels,
                  const std::string& types) {
  ASSERT_FALSE(kernels.empty());
  std::set<std::string> names, variants;
  for (const Kernel* k : kernels) {
    const std::string n(family.name(*k)), v(family.variant(*k));
    EXPECT_TRUE(names.insert(n).second) << "duplicate kernel name " << n;
    EXPECT_TRUE(variants.insert(v).second) << "duplicate variant " << v;
    const std::regex pattern(types + "_" + isa_in_variant(n) +
                             "_(\\d+x\\d+(_\\d+x\\d+)*|\\d+rows?)");
    EXPECT_TRUE(std::regex_match(v, pattern))
        << n << ": " << v << " is not " << types << "_" << isa_in_variant(n) << "_<tiles>";
  }
}

TEST(KernelNames, W4a8VariantsSpellTypesIsaAndTiles) {
  expect_names(w4a8::family(), w4a8::family().kernels(), "qai8dx_qsi4_f32");
}

TEST(KernelNames, W4a16VariantsSpellTypesIsaAndTiles) {
  expect_names(w4a16::family(), w4a16::family().kernels(), "f32_qsi4_f32");
}

TEST(KernelNames, DenseVariantsSpellTypesIsaAndTiles) {
  // The exact variants read f32 activations; the opt-in ones round them to bf16 pairs.
  std::vector<const dense::Kernel*> exact, bf16;
  for (const dense::Kernel* k : dense::family().kernels())
    (dense::family().exact(*k) ? exact : bf16).push_back(k);
  expect_names(dense::family(), exact, "f32_f32bf16_f32");
  expect_names(dense::family(), bf16, "bf16_bf16_f32");
}

TEST(KernelNames, AttentionVariantsSpellTypesIsaAndTiles) {
  expect_names(attention::family(), attention::family().kernels(), "f32_f32bf16kv_f32");
}

}  // namespace
}  // namespace dq4
