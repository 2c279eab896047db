#pragma once
// Causal self-attention over a paged KV cache, per sequence (one call or a batch): f32 queries,
// keys and values stored F32 or BF16 in fixed-size blocks found through a block table, giving f32.
//
// The exact math (every variant bit for bit, for any number of threads). For query row i (at
// position p = first_position + i) and head h, with kv head g = h / (num_heads / num_kv_heads),
// the keys j in [lo, p] where lo = window > 0 ? max(0, p - window + 1) : 0:
//   dot(a, b): 16 lane sums, lane l = fma chain over d = l, l + 16, l + 32, ... < head_dim in
//     d order starting from 0, then the tree t8[l] = s[l] + s[l + 8], t4[l] = t8[l] + t8[l + 4],
//     t2[l] = t4[l] + t4[l + 2], dot = t2[0] + t2[1];
//   s_j = dot(q, k_j) * scale, then with softcap > 0 (Gemma 2) s_j = soft_cap(s_j, softcap) =
//     softcap * std::tanh(s_j / softcap) (the same scalar call in every variant);
//   m = max_j s_j;  e_j = exp_approx(s_j - m) (attention_math.h);
//   sum = 16 lane sums over j (lane l takes j - lo = l, l + 16, ... in j order, plain adds),
//     reduced by the same tree;
//   o[d] = fma chain over j in order: o = fma(e_j, v_j[d], o) from 0;  out[d] = o[d] / sum.
// Keys and values stored as BF16 are widened exactly to f32 before use.
//
// Kernels never allocate or start threads; run() and run_batch() split (sequence, head, row
// block) tasks over the pool.

#include <cstdint>
#include <span>

#include "dq4/kernels/kernel_family.h"

namespace dq4 {
class ThreadPool;
}

namespace dq4::attention {

struct Kernel;  // one variant (scalar reference or one ISA); opaque, see family()

// The kernels compiled into this build and the choice among them: default_kernel() is the best
// this CPU supports, or the DQ4_ISA choice (family "attention"; dq4/kernels/kernel_family.h).
const KernelFamily<Kernel>& family();

}  // namespace dq4::attention

// Instantiated once, by the family's registry.cc (where Kernel is complete).
extern template class dq4::KernelFamily<dq4::attention::Kernel>;

namespace dq4::attention {

enum class KvType { f32, bf16 };

// One layer's keys and values of one sequence as the paged cache holds them: token t lives in
// block block_table[t / block_size], slot t % block_size; a block holds
// [num_kv_heads][block_size][head_dim] keys at keys + block * block_stride (elements of `type`),
// and the same for values.
struct PagedKv {
  const void* keys = nullptr;
  const void* values = nullptr;
  int64_t block_stride = 0;  // elements from one block to the next
  int64_t block_size = 0;    // tokens per block
  const int32_t* block_table = nullptr;
  KvType type = KvType::f32;
};

struct Args {
  const float* q = nullptr;  // [tokens, num_heads * head_dim], row stride ldq
  int64_t ldq = 0;
  float* out = nullptr;  // [tokens, num_heads * head_dim], row stride ldo; must not overlap q
  int64_t ldo = 0;
  int64_t tokens = 0;  // query rows
  int64_t first_position =
      0;  // position of query row 0; the cache holds [0, first_position + tokens)
  int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0;
  int64_t window = 0;  // sliding window in tokens (Mistral); 0 = the whole prefix
  float scale = 0;     // usually 1 / sqrt(head_dim)
  float softcap = 0;   // attention logit soft-capping (Gemma 2); 0 = none
  PagedKv kv;
  ThreadPool* pool = nullptr;  // default: the global pool
  int max_threads = 0;         // 0: all threads of the pool
};

// Throws dq4::Error naming the field for invalid arguments.
void run(const Args& args, const Kernel& kernel);
inline void run(const Args& args) { run(args, family().default_kernel()); }
// Several sequences (e.g. the decode rows of a serving step) in one job over the pool: a decode
// row's attention is too short to be worth a hand-off of its own. Every element must name the
// same pool and max_threads; each is checked as run() checks it. The results are run()'s.
void run_batch(std::span<const Args> batch, const Kernel& kernel);
inline void run_batch(std::span<const Args> batch) { run_batch(batch, family().default_kernel()); }

}  // namespace dq4::attention
