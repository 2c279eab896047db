// Linear: loading modules into parts (fused where kinds match) and running them.

#include "dq4/layers/linear.h"

#include <algorithm>
#include <variant>

#include "dq4/io/linear_tensors.h"
#include "dq4/kernels/dense.h"
#include "dq4/kernels/error.h"
#include "dq4/kernels/first_bad_row.h"
#include "dq4/kernels/thread_pool.h"
#include "dq4/kernels/w4a16.h"
#include "dq4/kernels/w4a8.h"
#include "linear_part.h"
#include "linear_sources.h"

namespace dq4 {

namespace {

// What one module will run, decided from its scheme and the user's options.
struct Plan {
  LinearRun run;
  int64_t group_size;  // int4 runs
};

Plan plan_for(const LinearTensors& t, const LinearOptions& options) {
  switch (t.scheme.kind) {
    case LinearKind::w4a8:
      return {LinearRun::w4a8, t.scheme.group_size};
    case LinearKind::w4a16:
      return {options.w4a16_as_w4a8 ? LinearRun::w4a8 : LinearRun::w4a16, t.scheme.group_size};
    case LinearKind::dense:
      break;
  }
  // Quantized at load (by gather_int4), so it fuses with checkpoint W4A8 modules of its group size.
  if (options.quantize_dense_group) return {LinearRun::w4a8, *options.quantize_dense_group};
  return {t.weight->dtype == Dtype::BF16 ? LinearRun::dense_bf16 : LinearRun::dense_f32, 0};
}

bool same_plan(const Plan& a, const Plan& b) {
  return a.run == b.run && a.group_size == b.group_size;
}

void check_options(const LinearOptions& options) {
  if (options.quantize_dense_group) {
    const int64_t g = *options.quantize_dense_group;
    if (g < 0 || g % 32 != 0)
      throw Error("quantize-dense group size " + std::to_string(g) +
                  ": must be 0 (channelwise) or a positive multiple of 32");
  }
}

std::unique_ptr<Linear::Part> make_part(std::span<const LinearTensors> modules, const Plan& plan) {
  auto part = std::make_unique<Linear::Part>();
  part->run = plan.run;
  part->group_size = plan.group_size;
  for (const LinearTensors& t : modules) {
    part->modules.push_back(t.module);
    part->columns += t.n;
  }
  switch (plan.run) {
    case LinearRun::w4a8:
      part->weights = w4a8::pack(layers::gather_int4(modules, plan.group_size).source);
      break;
    case LinearRun::w4a16:
      part->weights = w4a16::pack(layers::gather_int4(modules, plan.group_size).source);
      break;
    case LinearRun::dense_bf16:
    case LinearRun::dense_f32:
      part->weights = dense::pack(layers::gather_dense(modules).source);
      break;
  }
  return part;
}

std::string kernel_of(const Linear::Part& part) {
  return std::visit(
      [](const auto& w) {
        using W = std::decay_t<decltype(w)>;
        if constexpr (std::is_same_v<W, w4a8::PackedWeights>)
          return std::string(w4a8::family().variant(w.kernel()));
        else if constexpr (std::is_same_v<W, w4a16::PackedWeights>)
          return std::string(w4a16::family().variant(w.kernel()));
        else
          return std::string(dense::family().variant(w.kernel()));
      },
      part.weights);
}

}  // namespace

std::string_view linear_run_name(LinearRun run) {
  switch (run) {
    case LinearRun::w4a8:
      return "W4A8";
    case LinearRun::w4a16:
      return "W4A16";
    case LinearRun::dense_bf16:
      return "dense BF16";
    case LinearRun::dense_f32:
      return "dense F32";
  }
  return "?";
}

Linear::Linear() = default;
Linear::~Linear() = default;
Linear::Linear(Linear&&) noexcept = default;
Linear& Linear::operator=(Linear&&) noexcept = default;

Linear Linear::load(const Checkpoint& checkpoint, const QuantizationConfig& config,
                    std::span<const LinearModule> modules, const LinearOptions& options) {
  check_options(options);
  if (modules.empty()) throw Error("Linear::load: no modules given");
  std::vector<LinearTensors> tensors;
  std::vector<Plan> plans;
  for (const LinearModule& m : modules) {
    LinearTensors t = find_linear_tensors(checkpoint, m, config.resolve(m.name));
    check_linear_shape(t, m);
    if (!tensors.empty() && t.k != tensors[0].k)
      throw Error("module '" + m.name + "': in_features " + std::to_string(t.k) + " differs from " +
                  tensors[0].module + "'s " + std::to_string(tensors[0].k) +
                  " (only layers sharing one input can be loaded together)");
    plans.push_back(plan_for(t, options));
    tensors.push_back(std::move(t));
  }
  Linear linear;
  linear.in_features_ = tensors[0].k;
  for (size_t begin = 0; begin < tensors.size();) {
    size_t end = begin + 1;
    while (end < tensors.size() && same_plan(plans[end], plans[begin])) ++end;
    auto part = make_part(std::span(tensors).subspan(begin, end - begin), plans[begin]);
    part->first_column = linear.out_features_;
    linear.out_features_ += part->columns;
    linear.parts_.push_back(std::move(part));
    begin = end;
  }
  return linear;
}

Linear Linear::from_dense_tensor(const TensorView& weight, const LinearOptions& options) {
  check_options(options);
  if (weight.shape.size() != 2)
    throw Error("tensor '" + weight.name + "' in " + weight.file +
                ": a linear weight must be 2-D, got " + weight.shape_string());
  if (weight.dtype != Dtype::F32 && weight.dtype != Dtype::BF16 && weight.dtype != Dtype::F16)
    throw Error("tensor '" + weight.name + "' in " + weight.file +
                ": a dense weight must be F32, BF16 or F16");
  LinearTensors t;
  t.module = weight.name;
  t.n = weight.shape[0];
  t.k = weight.shape[1];
  t.weight = &weight;
  const Plan plan = plan_for(t, options);
  Linear linear;
  linear.in_features_ = t.k;
  linear.out_features_ = t.n;
  linear.parts_.push_back(make_part(std::span(&t, 1), plan));
  return linear;
}

size_t Linear::bytes() const {
  size_t total = 0;
  for (const auto& part : parts_)
    total += std::visit([](const auto& w) { return w.bytes(); }, part->weights);
  return total;
}

std::vector<Linear::PartInfo> Linear::parts() const {
  std::vector<PartInfo> out;
  for (const auto& p : parts_)
    out.push_back({p->run, p->group_size, p->first_column, p->columns, p->modules, kernel_of(*p)});
  return out;
}

std::string Linear::description() const {
  std::string text;
  for (const PartInfo& p : parts()) {
    if (!text.empty()) text += " | ";
    text += std::string(linear_run_name(p.run));
    if (p.run == LinearRun::w4a8 || p.run == LinearRun::w4a16)
      text += p.group_size == 0 ? " channel" : " g" + std::to_string(p.group_size);
    text += " [" + p.kernel + "] ";
    for (size_t i = 0; i < p.modules.size(); ++i) text += (i ? "+" : "") + p.modules[i];
  }
  return text;
}

namespace {

using PartTiles = std::variant<w4a8::MatmulTiles, w4a16::MatmulTiles, dense::MatmulTiles>;

// Rows a job's row stage makes and prepares at a time (8 rows of the widest inputs, 8192 f32,
// are 256 KiB: they stay in L2 between the two).
constexpr int64_t kPrepareRows = 8;

// What a bad activation row is reported as: the error of the first part's kernel family.
const char* checking_function(const Linear::Part& part) {
  switch (part.run) {
    case LinearRun::w4a8:
      return "w4a8::quantize_activations";
    case LinearRun::w4a16:
      return "w4a16::matmul";
    case LinearRun::dense_bf16:
    case LinearRun::dense_f32:
      break;
  }
  return "dense::matmul";
}

}  // namespace

void Linear::forward(const float* x, int64_t m, int64_t ldx, float* y, int64_t ldy,
                     ThreadPool* pool_arg, const LinearPass& pass) const {
  if (parts_.empty()) throw Error("Linear::forward: the layer holds no weights");
  if (m <= 0) throw Error("Linear::forward: m must be positive, got " + std::to_string(m));
  ThreadPool& pool = pool_arg != nullptr ? *pool_arg : ThreadPool::global();
  // The calling thread's, kept from call to call so that a warm forward allocates nothing (named
  // by reference: the tasks run on other threads). W4A8 parts (of different group sizes) share
  // the input: it is quantized once for all of them.
  thread_local w4a8::QuantizedActivations quantized_buffer;
  thread_local std::vector<PartTiles> tiles_buffer;
  w4a8::QuantizedActivations& quantized = quantized_buffer;
  std::vector<PartTiles>& tiles = tiles_buffer;
  tiles.clear();
  bool quantize = false;
  for (const auto& part : parts_) {
    MatmulArgs args;
    args.m = m;
    args.x = x;
    args.ldx = ldx;
    args.y = y + part->first_column;
    args.ldy = ldy;
    args.accumulate = pass.accumulate;
    args.pool = &pool;
    std::visit(
        [&](const auto& w) {
          using W = std::decay_t<decltype(w)>;
          if constexpr (std::is_same_v<W, w4a8::PackedWeights>) {
            if (!quantize) quantized.reserve(m, in_features_, &w.kernel());
            quantize = true;
            tiles.emplace_back(std::in_place_type<w4a8::MatmulTiles>, w, quantized, args);
          } else if constexpr (std::is_same_v<W, w4a16::PackedWeights>) {
            tiles.emplace_back(std::in_place_type<w4a16::MatmulTiles>, w, args);
          } else {
            tiles.emplace_back(std::in_place_type<dense::MatmulTiles>, w, args);
          }
        },
        part->weights);
  }

  // One job: the rows (made by `before`, then quantized or checked), every part's tiles, `after`.
  const int64_t row_tasks = std::min<int64_t>(m, pool.size());
  FirstBadRow bad;
  // A few rows at a time, so that the rows `before` writes are still in cache when they are
  // quantized or checked.
  auto prepare = [&](int64_t t) {
    const int64_t end = m * (t + 1) / row_tasks;
    for (int64_t r0 = m * t / row_tasks; r0 < end; r0 += kPrepareRows) {
      const int64_t r1 = std::min(end, r0 + kPrepareRows);
      if (pass.before) pass.before(r0, r1);
      if (quantize) bad.add(quantized.quantize_rows(x, ldx, r0, r1));
      for (const PartTiles& part : tiles) {
        if (const auto* t16 = std::get_if<w4a16::MatmulTiles>(&part))
          bad.add(t16->prepare_rows(r0, r1));
        else if (const auto* dense = std::get_if<dense::MatmulTiles>(&part))
          bad.add(dense->prepare_rows(r0, r1));
      }
    }
  };
  int64_t tile_count = 0;
  for (const PartTiles& part : tiles)
    tile_count += std::visit([](const auto& t) { return t.count(); }, part);
  auto run_tile = [&](int64_t t) {
    if (bad.get() >= 0) return;
    for (const PartTiles& part : tiles) {
      const int64_t count = std::visit([](const auto& p) { return p.count(); }, part);
      if (t < count) return std::visit([t](const auto& p) { p.run(t); }, part);
      t -= count;
    }
  };
  auto after = [&](int64_t t) {
    if (bad.get() < 0) pass.after(m * t / row_tasks, m * (t + 1) / row_tasks);
  };
  const ThreadPool::Stage stages[] = {
      {row_tasks, prepare}, {tile_count, run_tile}, {pass.after ? row_tasks : 0, after}};
  pool.run_stages(stages);
  if (bad.get() >= 0)
    throw Error(std::string(checking_function(*parts_.front())) + ": activation row " +
                std::to_string(bad.get()) + " holds a NaN or infinite value");
}

}  // namespace dq4
