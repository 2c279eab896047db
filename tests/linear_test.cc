// Linear: every kind a checkpoint can hold behind one forward(), fusing of layers that share an
// input, the explicit W4A16-on-W4A8 option and quantization of dense layers at load. A fused
// layer's outputs must equal, bit for bit, those of its modules run one by one.

#include "dq4/layers/linear.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "dq4/io/linear_tensors.h"
#include "dq4/kernels/dense.h"
#include "dq4/kernels/thread_pool.h"
#include "dq4/kernels/w4a16.h"
#include "dq4/kernels/w4a8.h"
#include "dq4/model/architecture.h"
#include "dq4/quant/rtn.h"
#include "expect_error.h"
#include "fixtures.h"
#include "safetensors_writer.h"

namespace dq4::test {
namespace {

std::vector<float> random_rows(int64_t m, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(m * k));
  for (float& v : x) v = dist(rng);
  return x;
}

std::vector<float> run(const Linear& linear, const std::vector<float>& x, int64_t m) {
  std::vector<float> y(static_cast<size_t>(m * linear.out_features()), NAN);
  linear.forward(x.data(), m, linear.in_features(), y.data(), linear.out_features());
  return y;
}

// Columns [first, first + n) of y [m, ld].
std::vector<float> columns(const std::vector<float>& y, int64_t m, int64_t ld, int64_t first,
                           int64_t n) {
  std::vector<float> out;
  for (int64_t r = 0; r < m; ++r)
    out.insert(out.end(), y.begin() + r * ld + first, y.begin() + r * ld + first + n);
  return out;
}

template <typename Packed, typename Matmul>
std::vector<float> run_packed(const Packed& w, Matmul matmul, const std::vector<float>& x,
                              int64_t m) {
  std::vector<float> y(static_cast<size_t>(m * w.n()));
  MatmulArgs a;
  a.m = m;
  a.x = x.data();
  a.ldx = w.k();
  a.y = y.data();
  a.ldy = w.n();
  matmul(w, a);
  return y;
}

void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
}

std::vector<LinearModule> attention_qkv(const Architecture& a, int layer) {
  auto all = a.linear_modules();
  return {all.begin() + layer * 7, all.begin() + layer * 7 + 3};
}

TEST(Linear, W4A16QkvFusedEqualsModulesOneByOne) {
  const std::string dir = fixtures_dir() + "/stories260K-hf-w4a16-ct";
  const Checkpoint checkpoint = Checkpoint::open_dir(dir);
  const QuantizationConfig config = QuantizationConfig::read(dir);
  const auto qkv = attention_qkv(Architecture::read(dir), 2);
  const Linear fused = Linear::load(checkpoint, config, qkv);
  ASSERT_EQ(fused.parts().size(), 1u);
  EXPECT_EQ(fused.parts()[0].run, LinearRun::w4a16);
  EXPECT_EQ(fused.out_features(), 64 + 32 + 32);
  EXPECT_NE(fused.description().find("W4A16 channel"), std::string::npos) << fused.description();

  for (int64_t m : {1, 5, 33}) {
    const auto x = random_rows(m, 64, 7);
    const auto y = run(fused, x, m);
    int64_t first = 0;
    for (const LinearModule& module : qkv) {
      const LinearTensors t =
          find_linear_tensors(checkpoint, module.name, config.resolve(module.name));
      const auto alone = run_packed(
          w4a16::pack(t.int4_source()),
          [](const auto& w, const MatmulArgs& a) { w4a16::matmul(w, a); }, x, m);
      expect_same_bits(columns(y, m, fused.out_features(), first, t.n), alone);
      first += t.n;
    }
  }
}

TEST(Linear, W4A16RunsOnW4A8KernelsOnlyWhenAsked) {
  const std::string dir = fixtures_dir() + "/stories260K-hf-w4a16-ct";
  const Checkpoint checkpoint = Checkpoint::open_dir(dir);
  const QuantizationConfig config = QuantizationConfig::read(dir);
  const auto modules = Architecture::read(dir).linear_modules();
  const std::vector<LinearModule> down = {modules[6]};
  LinearOptions options;
  options.w4a16_as_w4a8 = true;
  const Linear linear = Linear::load(checkpoint, config, down, options);
  EXPECT_EQ(linear.parts()[0].run, LinearRun::w4a8);
  const auto x = random_rows(3, 172, 11);
  const LinearTensors t =
      find_linear_tensors(checkpoint, down[0].name, config.resolve(down[0].name));
  expect_same_bits(run(linear, x, 3),
                   run_packed(
                       w4a8::pack(t.int4_source()),
                       [](const auto& w, const MatmulArgs& a) { w4a8::matmul(w, a); }, x, 3));
  EXPECT_EQ(Linear::load(checkpoint, config, down).parts()[0].run, LinearRun::w4a16);
}

TEST(Linear, DenseF32FusedGateUpMatchesFloat64) {
  const std::string dir = fixtures_dir() + "/stories260K-hf";
  const Checkpoint checkpoint = Checkpoint::open_dir(dir);
  const QuantizationConfig config = QuantizationConfig::read(dir);
  const auto modules = Architecture::read(dir).linear_modules();
  const std::vector<LinearModule> gate_up = {modules[4], modules[5]};
  const Linear linear = Linear::load(checkpoint, config, gate_up);
  ASSERT_EQ(linear.parts().size(), 1u);
  EXPECT_EQ(linear.parts()[0].run, LinearRun::dense_f32);
  EXPECT_EQ(linear.out_features(), 344);
  const int64_t m = 4, k = 64;
  const auto x = random_rows(m, k, 3);
  const auto y = run(linear, x, m);
  for (int part = 0; part < 2; ++part) {
    const auto w = checkpoint.tensor(gate_up[part].name + ".weight").as<float>();
    for (int64_t r = 0; r < m; ++r)
      for (int64_t n = 0; n < 172; ++n) {
        double exact = 0, magnitude = 0;
        for (int64_t i = 0; i < k; ++i) {
          exact += double(x[r * k + i]) * w[n * k + i];
          magnitude += std::abs(double(x[r * k + i]) * w[n * k + i]);
        }
        EXPECT_NEAR(y[r * 344 + part * 172 + n], exact, 1e-6 * magnitude + 1e-30);
      }
  }
}

TEST(Linear, TiedHeadQuantizedAtLoadOnlyWhenAsked) {
  const Checkpoint checkpoint = Checkpoint::open_dir(fixtures_dir() + "/stories260K-hf");
  const TensorView& embed = checkpoint.tensor("model.embed_tokens.weight");
  EXPECT_EQ(Linear::from_dense_tensor(embed).parts()[0].run, LinearRun::dense_f32);
  for (int64_t group : {0, 32}) {
    SCOPED_TRACE(group);
    LinearOptions options;
    options.quantize_dense_group = group;
    const Linear head = Linear::from_dense_tensor(embed, options);
    EXPECT_EQ(head.parts()[0].run, LinearRun::w4a8);
    EXPECT_EQ(head.out_features(), 512);
    EXPECT_LT(head.bytes(), embed.bytes / 4);
    // Equal to packing compressed-tensors' round-to-nearest of the same tensor.
    const RtnResult q = rtn_quantize(embed, group);
    int4::WeightSource s;
    s.n = 512;
    s.k = 64;
    s.group_size = group;
    s.values = q.values.data();
    s.scales = q.scales.data();
    s.scale_type = int4::ScaleType::f32;
    const auto x = random_rows(2, 64, 5);
    expect_same_bits(
        run(head, x, 2),
        run_packed(
            w4a8::pack(s), [](const auto& w, const MatmulArgs& a) { w4a8::matmul(w, a); }, x, 2));
  }
  LinearOptions bad;
  bad.quantize_dense_group = 48;
  expect_error([&] { Linear::from_dense_tensor(embed, bad); }, {"48", "multiple of 32"});
}

// A checkpoint whose q/v are W4A8 int-quantized (group 32, BF16 scales) and whose k is dense BF16,
// with a bias on v only: three parts, in output order.
class MixedKindsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937 rng(1);
    std::uniform_int_distribution<int> q(-8, 7);
    std::vector<TestTensor> tensors;
    auto int4 = [&](const std::string& name, int64_t n) {
      std::vector<uint8_t> values(static_cast<size_t>(n * kK));
      for (auto& v : values) v = static_cast<uint8_t>(static_cast<int8_t>(q(rng)));
      tensors.push_back({name + ".weight", "I8", {n, kK}, values});
      std::vector<uint8_t> scales(static_cast<size_t>(n * 2 * 2));
      for (size_t i = 0; i < scales.size(); i += 2) {
        scales[i] = static_cast<uint8_t>(rng());
        scales[i + 1] = 0x3c;  // bf16 around 0.01
      }
      tensors.push_back({name + ".weight_scale", "BF16", {n, 2}, scales});
    };
    int4("q", 48);
    std::vector<uint8_t> k_weight(static_cast<size_t>(16 * kK * 2));
    for (size_t i = 0; i < k_weight.size(); i += 2) {
      k_weight[i] = static_cast<uint8_t>(rng());
      k_weight[i + 1] = 0x3c;
    }
    tensors.push_back({"k.weight", "BF16", {16, kK}, k_weight});
    int4("v", 16);
    std::vector<uint8_t> bias(16 * 4);
    for (size_t i = 0; i < 16; ++i) {
      const float b = 0.25f * static_cast<float>(i);
      std::memcpy(bias.data() + i * 4, &b, 4);
    }
    tensors.push_back({"v.bias", "F32", {16}, bias});
    write_safetensors(dir_.file("model.safetensors"), tensors);
    const nlohmann::json config = {
        {"quantization_config",
         {{"config_groups",
           {{"group_0",
             {{"targets", {"Linear"}},
              {"weights", {{"num_bits", 4}, {"strategy", "group"}, {"group_size", 32}}},
              {"input_activations", {{"num_bits", 8}, {"strategy", "token"}, {"dynamic", true}}},
              {"format", "int-quantized"}}}}},
          {"ignore", {"k"}},
          {"quant_method", "compressed-tensors"}}}};
    config_ = QuantizationConfig::parse(config.dump(), "config.json");
  }

  static constexpr int64_t kK = 40;  // a partial last group of 8
  ScratchDir dir_;
  QuantizationConfig config_;
};

TEST_F(MixedKindsTest, PartsInOutputOrderEqualModulesOneByOne) {
  const Checkpoint checkpoint = Checkpoint::open_dir(dir_.path());
  const std::vector<LinearModule> modules = {
      {"q", 48, kK, false}, {"k", 16, kK, false}, {"v", 16, kK, true}};
  const Linear linear = Linear::load(checkpoint, config_, modules);
  const auto parts = linear.parts();
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].run, LinearRun::w4a8);
  EXPECT_EQ(parts[1].run, LinearRun::dense_bf16);
  EXPECT_EQ(parts[2].run, LinearRun::w4a8);
  EXPECT_EQ(parts[2].first_column, 64);
  const int64_t m = 3;
  const auto x = random_rows(m, kK, 9);
  const auto y = run(linear, x, m);
  for (size_t i = 0; i < 3; ++i) {
    const LinearTensors t =
        find_linear_tensors(checkpoint, modules[i].name, config_.resolve(modules[i].name));
    std::vector<float> alone;
    if (i == 1) {
      dense::WeightSource s;
      s.n = t.n;
      s.k = t.k;
      s.data = t.weight->data;
      s.type = dense::WeightType::bf16;
      alone = run_packed(
          dense::pack(s), [](const auto& w, const MatmulArgs& a) { dense::matmul(w, a); }, x, m);
    } else {
      int4::WeightSource s = t.int4_source();
      std::vector<float> bias;
      if (t.bias != nullptr) {
        const auto b = t.bias->as<float>();
        bias.assign(b.begin(), b.end());
        s.bias = bias.data();
      }
      alone = run_packed(
          w4a8::pack(s), [](const auto& w, const MatmulArgs& a) { w4a8::matmul(w, a); }, x, m);
    }
    expect_same_bits(columns(y, m, 80, parts[i].first_column, t.n), alone);
  }
  // Quantizing the dense k at load makes all three W4A8 g32: one fused part.
  LinearOptions options;
  options.quantize_dense_group = 32;
  EXPECT_EQ(Linear::load(checkpoint, config_, modules, options).parts().size(), 1u);
}

// One forward() of several parts is one pool job: `before` makes the input rows, the product is
// added to what y holds (accumulate), `after` sees its rows' outputs complete.
TEST_F(MixedKindsTest, OnePassRunsRowWorkAroundTheProductAndAccumulates) {
  const Checkpoint checkpoint = Checkpoint::open_dir(dir_.path());
  const std::vector<LinearModule> modules = {
      {"q", 48, kK, false}, {"k", 16, kK, false}, {"v", 16, kK, true}};
  const Linear linear = Linear::load(checkpoint, config_, modules);
  const int64_t m = 9, n = linear.out_features();
  const auto source = random_rows(m, kK, 11);
  std::vector<float> x_twice(source.size());
  for (size_t i = 0; i < source.size(); ++i) x_twice[i] = 2.0f * source[i];
  const auto stored = run(linear, x_twice, m);
  const auto earlier = random_rows(m, n, 12);

  ThreadPool pool(3);
  std::vector<float> x(source.size(), NAN), y = earlier;
  std::vector<std::atomic<int>> made(static_cast<size_t>(m)), finished(static_cast<size_t>(m));
  std::atomic<int> incomplete{0};
  const auto before = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t k = 0; k < kK; ++k) x[r * kK + k] = 2.0f * source[r * kK + k];
      made[r].fetch_add(1);
    }
  };
  const auto after = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      finished[r].fetch_add(1);
      for (int64_t c = 0; c < n; ++c)
        if (std::memcmp(&y[r * n + c], &earlier[r * n + c], 4) == 0) incomplete.fetch_add(1);
    }
  };
  const uint64_t jobs = pool.jobs();
  linear.forward(x.data(), m, kK, y.data(), n, &pool,
                 {.accumulate = true, .before = before, .after = after});
  EXPECT_EQ(pool.jobs() - jobs, 1u);
  for (int64_t r = 0; r < m; ++r) {
    EXPECT_EQ(made[r].load(), 1) << "row " << r;
    EXPECT_EQ(finished[r].load(), 1) << "row " << r;
  }
  EXPECT_EQ(incomplete.load(), 0);
  std::vector<float> expected(earlier.size());
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = earlier[i] + stored[i];
  expect_same_bits(y, expected);

  // A row that `before` leaves non-finite is the error of the first part's family; nothing runs
  // after it.
  const auto poison = [&](int64_t r0, int64_t r1) {
    before(r0, r1);
    if (r0 <= 6 && 6 < r1) x[6 * kK + 3] = INFINITY;
  };
  finished[0].store(0);
  expect_error(
      [&] {
        linear.forward(x.data(), m, kK, y.data(), n, &pool, {.before = poison, .after = after});
      },
      {"w4a8::quantize_activations", "activation row 6"});
  EXPECT_EQ(finished[0].load(), 0);
}

TEST_F(MixedKindsTest, ErrorsNameTheModule) {
  const Checkpoint checkpoint = Checkpoint::open_dir(dir_.path());
  const std::vector<LinearModule> wrong_shape = {{"q", 40, kK, false}};
  expect_error([&] { Linear::load(checkpoint, config_, wrong_shape); },
               {"module 'q'", "48x40", "40x40"});
  const std::vector<LinearModule> missing = {{"o", 16, kK, false}};
  expect_error([&] { Linear::load(checkpoint, config_, missing); }, {"'o.weight'", "missing"});
  expect_error([&] { Linear::load(checkpoint, config_, {}); }, "no modules");
}

}  // namespace
}  // namespace dq4::test
