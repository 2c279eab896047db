#include "bench/attention_cases.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "bench/cold_copies.h"
#include "bench/probes.h"
#include "dq4/kernels/aligned_buffer.h"
#include "dq4/kernels/thread_pool.h"

namespace dq4::cli::bench {
namespace {

constexpr int64_t kBlockSize = 16;

// Which heads share a kv head decides how many (row, head)s read each key and value.
struct HeadLayout {
  int64_t heads, kv_heads, head_dim;
};
constexpr HeadLayout kLayouts[] = {{32, 8, 64}, {16, 16, 128}};

struct AttentionShape {
  int64_t tokens, first_position;
};
constexpr AttentionShape kShapes[] = {{1, 511}, {1, 2047}, {1, 4095}, {512, 0}};
constexpr attention::KvType kTypes[] = {attention::KvType::f32, attention::KvType::bf16};

// One layer's keys and values for `context` tokens, random, in blocks in shuffled order.
struct KvCache {
  AlignedBuffer keys, values;
  std::vector<int32_t> block_table;
  int64_t element_bytes = 0;
  int64_t block_stride = 0;

  KvCache(const HeadLayout& layout, int64_t context, attention::KvType type, uint32_t seed)
      : block_stride(layout.kv_heads * kBlockSize * layout.head_dim) {
    const int64_t blocks = (context + kBlockSize - 1) / kBlockSize;
    element_bytes = type == attention::KvType::f32 ? 4 : 2;
    const size_t bytes = static_cast<size_t>(blocks * block_stride * element_bytes);
    keys = AlignedBuffer(bytes);
    values = AlignedBuffer(bytes);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (AlignedBuffer* b : {&keys, &values})
      for (size_t i = 0; i < bytes / static_cast<size_t>(element_bytes); ++i) {
        const float f = uniform(rng);
        std::memcpy(b->data() + i * element_bytes,
                    reinterpret_cast<const uint8_t*>(&f) + (element_bytes == 2 ? 2 : 0),
                    static_cast<size_t>(element_bytes));  // bf16: the high half
      }
    block_table.resize(static_cast<size_t>(blocks));
    std::iota(block_table.begin(), block_table.end(), 0);
    std::shuffle(block_table.begin(), block_table.end(), rng);
  }
};

// The cases of one head layout, cache type and shape, at each thread count, appended to `out`.
void run_cases(const AttentionBench& bench, const HeadLayout& layout, attention::KvType type,
               const AttentionShape& shape, std::vector<CaseResult>& out) {
  const int64_t context = shape.first_position + shape.tokens;
  const KvCache cache(layout, context, type, static_cast<uint32_t>(context));
  const size_t cache_bytes = cache.keys.size() + cache.values.size();
  ColdCopies<KvCache> cold(cache, cache_bytes, bench.cold_budget);
  for (size_t i = 0; i < cold.count(); ++i) {
    read_through(cold[i].keys.data(), cold[i].keys.size());
    read_through(cold[i].values.data(), cold[i].values.size());
  }
  const int64_t width = layout.heads * layout.head_dim;
  AlignedBuffer q(static_cast<size_t>(shape.tokens * width) * sizeof(float));
  AlignedBuffer o(q.size());
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  float* qf = reinterpret_cast<float*>(q.data());
  for (size_t i = 0; i < q.size() / sizeof(float); ++i) qf[i] = uniform(rng);
  // The cache type and the head layout, e.g. f32/32x64/8kv.
  const std::string case_name = std::string(type == attention::KvType::f32 ? "f32" : "bf16") + "/" +
                                std::to_string(layout.heads) + "x" +
                                std::to_string(layout.head_dim) + "/" +
                                std::to_string(layout.kv_heads) + "kv";

  for (int threads : bench.threads) {
    if (bench.starting)
      bench.starting(case_name + " tokens " + std::to_string(shape.tokens) + " context " +
                         std::to_string(context),
                     threads);
    attention::Args a;
    a.q = qf;
    a.ldq = width;
    a.out = reinterpret_cast<float*>(o.data());
    a.ldo = a.ldq;
    a.tokens = shape.tokens;
    a.first_position = shape.first_position;
    a.num_heads = layout.heads;
    a.num_kv_heads = layout.kv_heads;
    a.head_dim = layout.head_dim;
    a.scale = 1.0f / std::sqrt(static_cast<float>(layout.head_dim));
    a.kv.block_stride = cache.block_stride;
    a.kv.block_size = kBlockSize;
    a.kv.type = type;
    a.pool = &ThreadPool::global();
    a.max_threads = threads;
    CaseResult r;
    r.kind = "attention";
    r.isa = std::string(attention::family().name(*bench.kernel)) + "/" + case_name;
    r.variant = std::string(attention::family().variant(*bench.kernel)) + "/" + case_name;
    r.n = width;
    r.k = context;
    r.m = shape.tokens;
    r.grouped = false;
    r.threads = threads;
    r.seconds = time_calls(
        [&] {
          const KvCache& c = cold.next();
          a.kv.keys = c.keys.data();
          a.kv.values = c.values.data();
          a.kv.block_table = c.block_table.data();
          attention::run(a, *bench.kernel);
        },
        bench.plan);
    r.weight_bytes = 2 * context * layout.kv_heads * layout.head_dim * cache.element_bytes;
    r.cold_copies = static_cast<int64_t>(cold.count());
    // Per row and head: its keys' dot products and weighted values, 2 flops per element each.
    double keys = 0;
    for (int64_t i = 0; i < shape.tokens; ++i)
      keys += static_cast<double>(shape.first_position + i + 1);
    const double t = r.seconds.median;
    r.gflops = 4.0 * keys * static_cast<double>(width) / t * 1e-9;
    r.weight_gbps = static_cast<double>(r.weight_bytes) / t * 1e-9;
    out.push_back(r);
  }
}

}  // namespace

int64_t attention_case_count() {
  return static_cast<int64_t>(std::size(kLayouts) * std::size(kShapes) * std::size(kTypes));
}

std::vector<CaseResult> run_attention_cases(const AttentionBench& bench) {
  std::vector<CaseResult> out;
  for (const HeadLayout& layout : kLayouts)
    for (attention::KvType type : kTypes)
      for (const AttentionShape& shape : kShapes) run_cases(bench, layout, type, shape, out);
  return out;
}

}  // namespace dq4::cli::bench
