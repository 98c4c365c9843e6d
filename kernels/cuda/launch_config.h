// Grid/block arithmetic for the CUDA kernels, as pure constexpr functions with no
// CUDA include, so the host tests check it in every build (a wrong grid is the
// classic silent bug: rows skipped or written twice).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace hybrid::kernels::cuda {

constexpr int kWarpSize = 32;

constexpr size_t ceil_div(size_t a, size_t b) { return b == 0 ? 0 : (a + b - 1) / b; }

struct LaunchConfig {
  unsigned grid = 0;  // 0: nothing to launch
  unsigned block = 0;
  size_t shared_bytes = 0;
  // Elements (or rows) each thread (or warp) visits in a grid-stride loop.
  size_t per_thread = 0;
};

// Grid-stride elementwise launch over n items: one thread per item, capped at
// max_grid blocks (the kernels loop over the rest). n == 0 gives grid 0.
constexpr LaunchConfig launch_config(size_t n, unsigned block = 256, unsigned max_grid = 1u << 16) {
  if (block == 0 || block > 1024 || block % kWarpSize != 0)
    throw std::invalid_argument("launch_config: block must be a multiple of 32 in 32..1024, got " +
                                std::to_string(block));
  if (max_grid == 0) throw std::invalid_argument("launch_config: max_grid must be > 0");
  LaunchConfig c;
  c.block = block;
  if (n == 0) return c;
  const size_t blocks = ceil_div(n, block);
  c.grid = unsigned(std::min<size_t>(blocks, max_grid));
  c.per_thread = ceil_div(n, size_t(c.grid) * block);
  return c;
}

// One warp per row (layernorm, softmax rows, cross-entropy rows): warps_per_block
// rows per block, a grid covering every row exactly once (no grid-stride).
constexpr LaunchConfig warp_per_row_config(size_t rows, unsigned warps_per_block = 8) {
  if (warps_per_block == 0 || warps_per_block > 32)
    throw std::invalid_argument("warp_per_row_config: warps_per_block must be 1..32, got " +
                                std::to_string(warps_per_block));
  LaunchConfig c;
  c.block = warps_per_block * kWarpSize;
  if (rows == 0) return c;
  const size_t grid = ceil_div(rows, warps_per_block);
  if (grid > 0x7fffffffu)
    throw std::invalid_argument("warp_per_row_config: too many rows (" + std::to_string(rows) +
                                ")");
  c.grid = unsigned(grid);
  c.per_thread = 1;
  return c;
}

// One block per row for long rows (cross-entropy over a 50k vocabulary): block
// threads stride the row; shared memory holds one float per warp for reductions.
constexpr LaunchConfig block_per_row_config(size_t rows, size_t cols, unsigned max_block = 1024) {
  LaunchConfig c;
  unsigned block = kWarpSize;
  while (block < max_block && block < cols) block *= 2;
  c.block = block;
  c.shared_bytes = (block / kWarpSize) * sizeof(float);
  if (rows == 0) return c;
  if (rows > 0x7fffffffu)
    throw std::invalid_argument("block_per_row_config: too many rows (" + std::to_string(rows) +
                                ")");
  c.grid = unsigned(rows);
  c.per_thread = ceil_div(cols, block);
  return c;
}

// Column reduction over an [rows, cols] matrix (dbias, layernorm dweight/dbias):
// each block sums a strip of rows for `cols_per_block` columns into one partial
// row; a second pass adds the partials in a fixed order (deterministic).
struct ColumnReducePlan {
  unsigned col_blocks = 0;  // blocks along the columns
  unsigned row_blocks = 0;  // blocks along the rows = partial rows to add up
  unsigned block = 0;       // threads per block = columns per block
  size_t rows_per_block = 0;
  size_t scratch_floats = 0;  // row_blocks × cols
};

constexpr ColumnReducePlan column_reduce_plan(size_t rows, size_t cols, unsigned block = 256,
                                              unsigned target_blocks = 1024) {
  ColumnReducePlan p;
  p.block = block;
  if (rows == 0 || cols == 0) return p;
  p.col_blocks = unsigned(ceil_div(cols, block));
  const size_t want_row_blocks = std::max<size_t>(1, target_blocks / p.col_blocks);
  p.rows_per_block = std::max<size_t>(1, ceil_div(rows, want_row_blocks));
  p.row_blocks = unsigned(ceil_div(rows, p.rows_per_block));
  p.scratch_floats = size_t(p.row_blocks) * cols;
  return p;
}

// Per-segment work (Lamb's parameter tensors): a 2-D grid, y = segment, x =
// `splits` blocks sharing each segment, so one huge tensor (the embedding) does
// not run on a single block. Block x of a segment of length len covers
// [x·chunk, min(len, (x+1)·chunk)) with chunk = ceil(len / splits): every element
// once. splits depends only on the longest segment (deterministic partials).
struct SegmentPlan {
  unsigned splits = 0;  // blocks per segment (grid.x); 0: nothing to launch
  unsigned block = 0;
  unsigned segments = 0;  // grid.y
};

constexpr SegmentPlan segment_plan(size_t max_segment_len, size_t segments, unsigned block = 256,
                                   size_t per_thread = 16, unsigned max_splits = 1024) {
  if (segments > 65535)
    throw std::invalid_argument("segment_plan: at most 65535 segments, got " +
                                std::to_string(segments));
  SegmentPlan p;
  p.block = block;
  if (segments == 0 || max_segment_len == 0) return p;
  p.segments = unsigned(segments);
  p.splits = unsigned(
      std::clamp<size_t>(ceil_div(max_segment_len, size_t(block) * per_thread), 1, max_splits));
  return p;
}

// The range of block x of a segment of len elements, for a plan with `splits`.
constexpr std::pair<size_t, size_t> segment_block_range(size_t len, unsigned splits, unsigned x) {
  const size_t chunk = ceil_div(len, splits);
  const size_t b = std::min(len, size_t(x) * chunk);
  return {b, std::min(len, b + chunk)};
}

// The plan over host segment bounds (segments + 1 offsets from 0, not
// decreasing), checked: std::invalid_argument naming `op` otherwise.
inline SegmentPlan segment_plan_of_bounds(const int64_t* bounds, int segments, const char* op) {
  if (segments < 0 || (segments > 0 && bounds[0] != 0))
    throw std::invalid_argument(std::string(op) + ": segment bounds must start at 0");
  size_t longest = 0;
  for (int s = 0; s < segments; ++s) {
    if (bounds[s + 1] < bounds[s])
      throw std::invalid_argument(std::string(op) + ": segment bounds must not decrease");
    longest = std::max(longest, size_t(bounds[s + 1] - bounds[s]));
  }
  return segment_plan(longest, size_t(segments));
}

}  // namespace hybrid::kernels::cuda
