#pragma once
// The experts of a mixture-of-experts layer: Linears of one shape (each expert's fused gate and
// up, or each expert's down), each run over the rows routed to it, all of them in one pool job.
//
// The rows come grouped by expert: expert e runs on rows [offsets[e], offsets[e + 1]) of the
// grouped input, so that each selected expert's weights are read once for all the rows that chose
// it. The grouped input may be gathered from an input whose rows are each routed to several
// experts: W4A8 experts then quantize each input row once and copy its quantized form to every
// grouped row it is routed to. Each grouped row's output is what that expert's Linear::forward
// gives for that row alone, bit for bit, whatever the other rows.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dq4/layers/linear.h"

namespace dq4 {

// What Experts::forward does besides the products, in the same pool job.
struct ExpertsPass {
  // Called on ranges of the input's rows just before they are read (may write them).
  FunctionRef<void(int64_t, int64_t)> before = {};
  // Called on ranges of the grouped rows once their outputs are written.
  FunctionRef<void(int64_t, int64_t)> after = {};
  // Called on ranges of [0, finish_rows) once every grouped row's output is written and `after`
  // has run on it (e.g. the weighted sum of each token's experts).
  FunctionRef<void(int64_t, int64_t)> finish = {};
  int64_t finish_rows = 0;
};

class Experts {
 public:
  Experts();
  ~Experts();
  Experts(Experts&&) noexcept;
  Experts& operator=(Experts&&) noexcept;

  // One Linear per expert, each loaded from its modules as Linear::load does (fused where kinds
  // match). Throws dq4::Error naming the module, as Linear::load does, and for experts of
  // different shapes.
  static Experts load(const Checkpoint& checkpoint, const QuantizationConfig& config,
                      std::span<const std::vector<LinearModule>> experts,
                      const LinearOptions& options = {});

  int64_t count() const { return static_cast<int64_t>(experts_.size()); }
  int64_t in_features() const;
  int64_t out_features() const;
  const Linear& expert(int64_t e) const { return experts_[static_cast<size_t>(e)]; }
  size_t bytes() const;  // every expert's packed weights
  // Expert 0's description, and how many there are.
  std::string description() const;

  // The grouped rows: `offsets` (count() + 1 of them, non-decreasing from 0); `source` the row of
  // x that each grouped row takes (offsets.back() of them), or null when x is the grouped input
  // itself (m = offsets.back()). y[g] (row stride ldy) is grouped row g's output.
  struct Rows {
    std::span<const int64_t> offsets;
    const int32_t* source = nullptr;
  };
  // Throws dq4::Error for a non-finite activation (naming the input row) or bad arguments.
  void forward(const float* x, int64_t m, int64_t ldx, const Rows& rows, float* y, int64_t ldy,
               ThreadPool* pool = nullptr, const ExpertsPass& pass = {}) const;

 private:
  void forward_each(const float* x, int64_t m, int64_t ldx, const Rows& rows, float* y, int64_t ldy,
                    ThreadPool& pool, const ExpertsPass& pass) const;
  std::vector<Linear> experts_;
  bool grouped_w4a8_ = false;  // every expert is one W4A8 part: run in one job
};

}  // namespace dq4
