#pragma once
// The arguments of every kernel family's matmul(): Y[m, n] = clamp(f(X[m, k], packed W), min, max),
// or with `accumulate` Y[m, n] += that (one f32 add per element after the clamp, bit for bit what a
// separate add of the stored result would give: a residual added in the matmul's epilogue).

#include <cfloat>
#include <cstdint>

namespace dq4 {

class ThreadPool;

struct MatmulArgs {
  int64_t m = 0;
  const float* x = nullptr;  // [m, k], row stride ldx >= k
  int64_t ldx = 0;
  float* y = nullptr;  // [m, n], row stride ldy >= n; must not overlap x
  int64_t ldy = 0;
  float min = -FLT_MAX;  // output clamp
  float max = FLT_MAX;
  bool accumulate = false;     // add the result to what y holds instead of storing it
  ThreadPool* pool = nullptr;  // default: the global pool
  int max_threads = 0;         // 0: all threads of the pool
};

// The output of a matmul split into tiles for a number of threads (every family's MatmulTiles):
// row_tiles x panel_tiles tiles of up to row_block rows by a contiguous range of the weights'
// panels (a contiguous byte range of the packed weights), enough tiles to balance the threads.
struct TileSplit {
  int64_t m = 0, panels = 0, row_block = 0, row_tiles = 0, panel_tiles = 0;

  static TileSplit of(int64_t m, int64_t panels, int threads, int64_t row_block = 128);
  int64_t tiles() const { return row_tiles * panel_tiles; }
  // Rows [*m0, *m1) and panels [*p0, *p1) of tile t; the panel range may be empty.
  void tile(int64_t t, int64_t* m0, int64_t* m1, int64_t* p0, int64_t* p1) const {
    const int64_t rt = t / panel_tiles, pt = t % panel_tiles;
    *m0 = rt * row_block;
    *m1 = *m0 + row_block < m ? *m0 + row_block : m;
    *p0 = panels * pt / panel_tiles;
    *p1 = panels * (pt + 1) / panel_tiles;
  }
};

}  // namespace dq4
