// run() and run_batch(): argument checks and the split of (sequence, kv head group, head range,
// row block) tiles over the pool, each thread handing its tiles the scratch it owns.

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../family.h"
#include "dq4/kernels/attention.h"
#include "dq4/kernels/error.h"
#include "kernel.h"

namespace dq4::attention {
namespace {

// Query rows per tile: a few passes, so that the causal triangle balances over the threads.
constexpr int64_t kRowBlock = 4 * kRowsPerPass;

[[noreturn]] void fail(const std::string& what) { throw Error("attention::run: " + what); }

void check_positive(const char* field, int64_t value) {
  if (value <= 0) fail(std::string(field) + " must be positive, got " + std::to_string(value));
}

void check_aligned(const char* field, const void* p, size_t alignment) {
  if (reinterpret_cast<uintptr_t>(p) % alignment != 0)
    fail(std::string(field) + " is not aligned to " + std::to_string(alignment) + " bytes");
}

Problem checked_problem(const Args& a) {
  if (a.q == nullptr) fail("q is null");
  if (a.out == nullptr) fail("out is null");
  if (a.kv.keys == nullptr) fail("kv.keys is null");
  if (a.kv.values == nullptr) fail("kv.values is null");
  if (a.kv.block_table == nullptr) fail("kv.block_table is null");
  check_positive("tokens", a.tokens);
  check_positive("num_heads", a.num_heads);
  check_positive("num_kv_heads", a.num_kv_heads);
  check_positive("head_dim", a.head_dim);
  check_positive("kv.block_size", a.kv.block_size);
  if (a.first_position < 0)
    fail("first_position must be >= 0, got " + std::to_string(a.first_position));
  if (a.window < 0) fail("window must be >= 0, got " + std::to_string(a.window));
  if (a.max_threads < 0) fail("max_threads must be >= 0, got " + std::to_string(a.max_threads));
  if (a.num_heads % a.num_kv_heads != 0)
    fail("num_heads " + std::to_string(a.num_heads) + " is not a multiple of num_kv_heads " +
         std::to_string(a.num_kv_heads));
  if (!std::isfinite(a.scale)) fail("scale must be finite, got " + std::to_string(a.scale));
  if (!std::isfinite(a.softcap) || a.softcap < 0)
    fail("softcap must be finite and >= 0, got " + std::to_string(a.softcap));
  const int64_t width = a.num_heads * a.head_dim;
  if (a.ldq < width)
    fail("ldq " + std::to_string(a.ldq) + " is smaller than num_heads * head_dim " +
         std::to_string(width));
  if (a.ldo < width)
    fail("ldo " + std::to_string(a.ldo) + " is smaller than num_heads * head_dim " +
         std::to_string(width));
  const int64_t block_floats = a.num_kv_heads * a.kv.block_size * a.head_dim;
  if (a.kv.block_stride < block_floats)
    fail("kv.block_stride " + std::to_string(a.kv.block_stride) +
         " is smaller than num_kv_heads * block_size * head_dim " + std::to_string(block_floats));
  if (a.kv.type != KvType::f32 && a.kv.type != KvType::bf16) fail("kv.type is not f32 or bf16");
  check_aligned("q", a.q, alignof(float));
  check_aligned("out", a.out, alignof(float));
  const size_t element = a.kv.type == KvType::f32 ? sizeof(float) : sizeof(uint16_t);
  check_aligned("kv.keys", a.kv.keys, element);
  check_aligned("kv.values", a.kv.values, element);
  // The rows' extents [start, start + (tokens - 1) * ld + width) must not overlap.
  const auto* q0 = reinterpret_cast<const char*>(a.q);
  const auto* o0 = reinterpret_cast<const char*>(a.out);
  const auto* q1 = reinterpret_cast<const char*>(a.q + (a.tokens - 1) * a.ldq + width);
  const auto* o1 = reinterpret_cast<const char*>(a.out + (a.tokens - 1) * a.ldo + width);
  if (q0 < o1 && o0 < q1) fail("out overlaps q");
  const int64_t blocks = (a.first_position + a.tokens + a.kv.block_size - 1) / a.kv.block_size;
  for (int64_t b = 0; b < blocks; ++b)
    if (a.kv.block_table[b] < 0)
      fail("kv.block_table[" + std::to_string(b) + "] is negative (" +
           std::to_string(a.kv.block_table[b]) + ")");
  return Problem{a.q,         a.ldq,          a.out,      a.ldo,    a.tokens, a.first_position,
                 a.num_heads, a.num_kv_heads, a.head_dim, a.window, a.scale,  a.kv,
                 a.softcap};
}

int64_t row_blocks(const Problem& p) { return (p.tokens + kRowBlock - 1) / kRowBlock; }

}  // namespace

void run(const Args& a, const Kernel& kernel) { run_batch({&a, 1}, kernel); }

void run_batch(std::span<const Args> batch, const Kernel& kernel) {
  if (batch.empty()) return;
  // The calling thread's, kept from call to call so that a warm step allocates nothing (named by
  // reference: the tasks run on other threads).
  thread_local std::vector<Problem> problems_buffer;
  thread_local std::vector<int64_t> splits_buffer, first_task_buffer;
  std::vector<Problem>& problems = problems_buffer;
  std::vector<int64_t>& head_splits = splits_buffer;
  std::vector<int64_t>& first_task = first_task_buffer;
  problems.clear();
  for (const Args& a : batch) {
    problems.push_back(checked_problem(a));
    if (a.pool != batch[0].pool || a.max_threads != batch[0].max_threads)
      fail("every sequence of a batch must name the same pool and max_threads");
  }
  if (!kernel.supported(cpu_features()))
    fail(kernels::unsupported_reason(kernel.name, kernel.needs));
  const kernels::CallThreads threads = kernels::call_threads(batch[0].pool, batch[0].max_threads);

  // Whole kv head groups share their keys and values; split a group's heads only when there
  // are too few tiles in the whole batch to keep the threads busy.
  int64_t group_tiles = 0;
  for (const Problem& p : problems) group_tiles += p.num_kv_heads * row_blocks(p);
  const int64_t splits_wanted = (2 * threads.count + group_tiles - 1) / group_tiles;
  head_splits.assign(problems.size(), 0);
  first_task.assign(problems.size() + 1, 0);
  for (size_t i = 0; i < problems.size(); ++i) {
    const Problem& p = problems[i];
    head_splits[i] = std::clamp<int64_t>(splits_wanted, 1, p.group());
    first_task[i + 1] = first_task[i] + p.num_kv_heads * row_blocks(p) * head_splits[i];
  }
  threads.pool.run(
      first_task.back(),
      [&](int64_t task) {
        const size_t i = static_cast<size_t>(
            std::upper_bound(first_task.begin(), first_task.end(), task) - first_task.begin() - 1);
        const Problem& p = problems[i];
        const int64_t splits = head_splits[i], local = task - first_task[i];
        // The last row blocks (the most keys) of every head first, so that the short tiles
        // fill in at the end.
        const int64_t per_row_block = p.num_kv_heads * splits;
        const int64_t rb = row_blocks(p) - 1 - local / per_row_block, rest = local % per_row_block;
        const int64_t split = rest % splits, g = rest / splits;
        const int64_t group = p.group();
        Tile t;
        t.kv_head = g;
        t.head_begin = g * group + group * split / splits;
        t.head_end = g * group + group * (split + 1) / splits;
        t.row_begin = rb * kRowBlock;
        t.row_end = std::min(p.tokens, t.row_begin + kRowBlock);
        const auto bytes = static_cast<size_t>(scratch_floats(p, t)) * sizeof(float);
        kernel.run(p, t, reinterpret_cast<float*>(kernels::thread_scratch(bytes)));
      },
      threads.count);
}

}  // namespace dq4::attention
