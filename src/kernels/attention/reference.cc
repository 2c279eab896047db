// The scalar reference: attention.h's math written out literally, one (head, row) at a time.

#include "attention_math.h"
#include "kernel.h"

namespace dq4::attention {
namespace {

// Element d of token j's key (keys true) or value vector of kv head g.
float kv_at(const Problem& p, bool keys, int64_t g, int64_t j, int64_t d) {
  const int64_t at = kv_offset(p.kv, p.head_dim, g, j) + d;
  const void* base = keys ? p.kv.keys : p.kv.values;
  if (p.kv.type == KvType::bf16) return widen_bf16(static_cast<const uint16_t*>(base)[at]);
  return static_cast<const float*>(base)[at];
}

float dot(const Problem& p, const float* q, int64_t g, int64_t j) {
  float lanes[16] = {};
  for (int64_t d = 0; d < p.head_dim; ++d)
    lanes[d % 16] = std::fma(q[d], kv_at(p, true, g, j, d), lanes[d % 16]);
  return reduce16(lanes);
}

// Row i of head h; scratch: the row's scores (then weights), then its output accumulator.
void attend(const Problem& p, int64_t h, int64_t i, float* scratch) {
  const int64_t g = h / p.group(), lo = p.key_begin(i), hi = p.key_end(i);
  const float* q = p.q + i * p.ldq + h * p.head_dim;
  float* e = scratch;
  float* o = scratch + (hi - lo);
  float m = -INFINITY;
  for (int64_t j = lo; j < hi; ++j) {
    e[j - lo] = dot(p, q, g, j) * p.scale;
    if (p.softcap > 0) e[j - lo] = soft_cap(e[j - lo], p.softcap);
    m = e[j - lo] > m ? e[j - lo] : m;
  }
  float lanes[16] = {};
  for (int64_t j = lo; j < hi; ++j) {
    e[j - lo] = exp_approx(e[j - lo] - m);
    lanes[(j - lo) % 16] += e[j - lo];
  }
  const float sum = reduce16(lanes);
  for (int64_t d = 0; d < p.head_dim; ++d) o[d] = 0.0f;
  for (int64_t j = lo; j < hi; ++j)
    for (int64_t d = 0; d < p.head_dim; ++d)
      o[d] = std::fma(e[j - lo], kv_at(p, false, g, j, d), o[d]);
  float* out = p.out + i * p.ldo + h * p.head_dim;
  for (int64_t d = 0; d < p.head_dim; ++d) out[d] = o[d] / sum;
}

void run(const Problem& p, const Tile& t, float* scratch) {
  for (int64_t h = t.head_begin; h < t.head_end; ++h)
    for (int64_t i = t.row_begin; i < t.row_end; ++i) attend(p, h, i, scratch);
}

bool supported(const CpuFeatures&) { return true; }

}  // namespace

extern const Kernel kReferenceKernel = {"reference", "f32_f32bf16kv_f32_scalar_1row", "nothing",
                                        supported, run};

}  // namespace dq4::attention
