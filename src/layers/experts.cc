// Experts: a mixture's Linears run over the rows routed to each, in one pool job when every expert
// is W4A8 (the activations quantized once per input row), else one Linear::forward per expert.

#include "dq4/layers/experts.h"

#include <algorithm>

#include "dq4/kernels/error.h"
#include "dq4/kernels/first_bad_row.h"
#include "dq4/kernels/thread_pool.h"
#include "linear_part.h"

namespace dq4 {
namespace {

// Runs task(r0, r1) over ranges covering [0, rows) once each, in at most pool.size() tasks.
struct RowRanges {
  int64_t rows, tasks;
  RowRanges(int64_t rows_, const ThreadPool& pool)
      : rows(rows_), tasks(std::min<int64_t>(rows_, pool.size())) {}
  int64_t begin(int64_t t) const { return rows * t / tasks; }
  int64_t end(int64_t t) const { return rows * (t + 1) / tasks; }
};

}  // namespace

Experts::Experts() = default;
Experts::~Experts() = default;
Experts::Experts(Experts&&) noexcept = default;
Experts& Experts::operator=(Experts&&) noexcept = default;

Experts Experts::load(const Checkpoint& checkpoint, const QuantizationConfig& config,
                      std::span<const std::vector<LinearModule>> experts,
                      const LinearOptions& options) {
  if (experts.empty()) throw Error("Experts::load: no experts given");
  Experts out;
  out.grouped_w4a8_ = true;
  for (const std::vector<LinearModule>& modules : experts) {
    Linear linear = Linear::load(checkpoint, config, modules, options);
    if (!out.experts_.empty() &&
        (linear.in_features() != out.in_features() || linear.out_features() != out.out_features()))
      throw Error("module '" + modules.front().name + "': expert of shape " +
                  std::to_string(linear.out_features()) + "x" +
                  std::to_string(linear.in_features()) + ", the first expert's is " +
                  std::to_string(out.out_features()) + "x" + std::to_string(out.in_features()));
    out.grouped_w4a8_ =
        out.grouped_w4a8_ && linear.parts_.size() == 1 && linear.parts_[0]->run == LinearRun::w4a8;
    out.experts_.push_back(std::move(linear));
  }
  return out;
}

int64_t Experts::in_features() const {
  return experts_.empty() ? 0 : experts_.front().in_features();
}
int64_t Experts::out_features() const {
  return experts_.empty() ? 0 : experts_.front().out_features();
}

size_t Experts::bytes() const {
  size_t total = 0;
  for (const Linear& e : experts_) total += e.bytes();
  return total;
}

std::string Experts::description() const {
  if (experts_.empty()) return "no experts";
  return std::to_string(experts_.size()) + " experts, each " + experts_.front().description();
}

void Experts::forward(const float* x, int64_t m, int64_t ldx, const Rows& rows, float* y,
                      int64_t ldy, ThreadPool* pool_arg, const ExpertsPass& pass) const {
  const int64_t count = this->count();
  if (count == 0) throw Error("Experts::forward: no experts loaded");
  if (static_cast<int64_t>(rows.offsets.size()) != count + 1 || rows.offsets.front() != 0)
    throw Error("Experts::forward: expected " + std::to_string(count + 1) +
                " offsets starting at 0");
  int64_t used_experts = 0;  // with at least one row routed to them
  for (int64_t e = 0; e < count; ++e) {
    const int64_t rows_of_e =
        rows.offsets[static_cast<size_t>(e + 1)] - rows.offsets[static_cast<size_t>(e)];
    if (rows_of_e < 0) throw Error("Experts::forward: offsets must not decrease");
    if (rows_of_e > 0) ++used_experts;
  }
  const int64_t routed = rows.offsets.back();
  if (m <= 0 || (rows.source == nullptr && m != routed))
    throw Error("Experts::forward: " + std::to_string(m) + " input rows for " +
                std::to_string(routed) + " grouped rows");
  ThreadPool& pool = pool_arg != nullptr ? *pool_arg : ThreadPool::global();
  if (!grouped_w4a8_ || routed == 0) return forward_each(x, m, ldx, rows, y, ldy, pool, pass);

  // The calling thread's, kept from call to call so that a warm forward allocates nothing.
  thread_local w4a8::QuantizedActivations input_buffer, grouped_buffer;
  thread_local std::vector<w4a8::MatmulTiles> tiles_buffer;
  thread_local std::vector<int64_t> first_tile_buffer;
  w4a8::QuantizedActivations& input = input_buffer;
  w4a8::QuantizedActivations& grouped = grouped_buffer;
  std::vector<w4a8::MatmulTiles>& tiles = tiles_buffer;
  std::vector<int64_t>& first_tile = first_tile_buffer;

  const auto& weights = [&](int64_t e) -> const w4a8::PackedWeights& {
    return std::get<w4a8::PackedWeights>(experts_[static_cast<size_t>(e)].parts_[0]->weights);
  };
  const w4a8::Kernel* quantizer = &weights(0).kernel();
  grouped.reserve(routed, in_features(), quantizer);
  w4a8::QuantizedActivations& quantized = rows.source != nullptr ? input : grouped;
  if (rows.source != nullptr) input.reserve(m, in_features(), quantizer);
  tiles.clear();
  first_tile.clear();
  // Room for every expert at once: later steps routing to more experts allocate nothing.
  tiles.reserve(static_cast<size_t>(count));
  first_tile.reserve(static_cast<size_t>(count));
  // Each expert's product is split for only as many threads as there are per routed expert:
  // with at least one expert per thread (a decode step routing to 8 experts on 2 threads) every
  // tile is a whole expert, a contiguous stream of its weights, instead of pieces of a few
  // panels that the threads take in turns.
  // (routed > 0 here, so used_experts >= 1.)
  const int threads_per_expert = static_cast<int>(std::max<int64_t>(1, pool.size() / used_experts));
  int64_t tile_count = 0;
  for (int64_t e = 0; e < count; ++e) {
    const int64_t first = rows.offsets[static_cast<size_t>(e)];
    const int64_t rows_of_e = rows.offsets[static_cast<size_t>(e + 1)] - first;
    if (rows_of_e == 0) continue;
    MatmulArgs args;
    args.m = rows_of_e;
    args.y = y + first * ldy;
    args.ldy = ldy;
    args.pool = &pool;
    args.max_threads = threads_per_expert;
    tiles.emplace_back(weights(e), grouped, first, args);
    first_tile.push_back(tile_count);
    tile_count += tiles.back().count();
  }

  FirstBadRow bad;
  const RowRanges input_ranges(m, pool), grouped_ranges(routed, pool),
      finish_ranges(pass.finish_rows, pool);
  auto prepare = [&](int64_t t) {
    const int64_t r0 = input_ranges.begin(t), r1 = input_ranges.end(t);
    if (pass.before) pass.before(r0, r1);
    bad.add(quantized.quantize_rows(x, ldx, r0, r1));
  };
  auto gather = [&](int64_t t) {
    if (bad.get() >= 0) return;
    for (int64_t g = grouped_ranges.begin(t); g < grouped_ranges.end(t); ++g)
      grouped.copy_row(g, input, rows.source[g]);
  };
  auto run_tile = [&](int64_t t) {
    if (bad.get() >= 0) return;
    const size_t i = static_cast<size_t>(std::upper_bound(first_tile.begin(), first_tile.end(), t) -
                                         first_tile.begin() - 1);
    tiles[i].run(t - first_tile[i]);
  };
  auto after = [&](int64_t t) {
    if (bad.get() < 0) pass.after(grouped_ranges.begin(t), grouped_ranges.end(t));
  };
  auto finish = [&](int64_t t) {
    if (bad.get() < 0) pass.finish(finish_ranges.begin(t), finish_ranges.end(t));
  };
  const ThreadPool::Stage stages[] = {{input_ranges.tasks, prepare},
                                      {rows.source != nullptr ? grouped_ranges.tasks : 0, gather},
                                      {tile_count, run_tile},
                                      {pass.after ? grouped_ranges.tasks : 0, after},
                                      {pass.finish ? finish_ranges.tasks : 0, finish}};
  pool.run_stages(stages);
  if (bad.get() >= 0)
    throw Error("w4a8::quantize_activations: activation row " + std::to_string(bad.get()) +
                " holds a NaN or infinite value");
}

// Experts of other kinds: the grouped rows gathered in f32, then each expert's Linear::forward
// over its rows (a job each).
void Experts::forward_each(const float* x, int64_t m, int64_t ldx, const Rows& rows, float* y,
                           int64_t ldy, ThreadPool& pool, const ExpertsPass& pass) const {
  const int64_t routed = rows.offsets.back(), k = in_features();
  if (pass.before) {
    const RowRanges r(m, pool);
    pool.run(r.tasks, [&](int64_t t) { pass.before(r.begin(t), r.end(t)); });
  }
  thread_local std::vector<float> gathered_buffer;
  const float* input = x;
  int64_t ld = ldx;
  if (rows.source != nullptr && routed > 0) {
    std::vector<float>& gathered = gathered_buffer;
    if (gathered.size() < static_cast<size_t>(routed * k))
      gathered.resize(static_cast<size_t>(routed * k));
    for (int64_t g = 0; g < routed; ++g)
      std::copy_n(x + rows.source[g] * ldx, k, gathered.data() + g * k);
    input = gathered.data();
    ld = k;
  }
  for (int64_t e = 0; e < count(); ++e) {
    const int64_t first = rows.offsets[static_cast<size_t>(e)];
    const int64_t rows_of_e = rows.offsets[static_cast<size_t>(e + 1)] - first;
    if (rows_of_e > 0)
      experts_[static_cast<size_t>(e)].forward(input + first * ld, rows_of_e, ld, y + first * ldy,
                                               ldy, &pool);
  }
  if (pass.after && routed > 0) {
    const RowRanges r(routed, pool);
    pool.run(r.tasks, [&](int64_t t) { pass.after(r.begin(t), r.end(t)); });
  }
  if (pass.finish && pass.finish_rows > 0) {
    const RowRanges r(pass.finish_rows, pool);
    pool.run(r.tasks, [&](int64_t t) { pass.finish(r.begin(t), r.end(t)); });
  }
}

}  // namespace dq4
