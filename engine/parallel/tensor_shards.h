// Tensor parallelism's two views of the parameters: a rank's flat space holds
// its pieces (ParamSpec::shard); the whole model's flat space, the one a single
// process, an llm.c file and a checkpoint's consolidation use, holds whole
// tensors (ParamSpec::full_offset). These copy between them, for weights and,
// elementwise alike, for optimizer state.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model/module.h"

namespace hybrid::engine {

// Calls fn(offset in the piece, offset in the whole tensor, count) for every
// contiguous run of the piece of p that tensor-parallel rank `index` holds.
template <class Fn>
void for_each_shard_run(const ParamSpec& p, int index, Fn&& fn) {
  TensorShard s = p.shard;
  s.index = index;
  if (p.numel == 0) return;  // another pipeline stage's
  if (s.replicated()) return fn(int64_t(0), int64_t(0), p.numel);
  const int64_t rows = p.full_shape[0];
  const int64_t inner = p.full_numel() / rows;  // elements per row
  if (s.dim == 0) {                             // each stacked matrix's block of rows
    const std::vector<int64_t> groups = s.groups.empty() ? std::vector<int64_t>{rows} : s.groups;
    int64_t whole_row = 0, piece_row = 0;
    for (int64_t group_rows : groups) {
      const int64_t piece_rows = group_rows / s.parts;
      fn(piece_row * inner, (whole_row + s.index * piece_rows) * inner, piece_rows * inner);
      whole_row += group_rows;
      piece_row += piece_rows;
    }
    return;
  }
  const int64_t piece_cols = inner / s.parts;  // dim 1: a block of every row
  for (int64_t r = 0; r < rows; ++r)
    fn(r * piece_cols, r * inner + s.index * piece_cols, piece_cols);
}

// This rank's flat space (tree.param_count()) cut from the whole model's
// (tree.full_param_count() values). A pipeline stage holds only its own
// parameters: the others are neither cut nor written back.
std::vector<float> shard_flat(const ModuleTree& tree, const float* whole);
// Writes tensor-parallel rank `index`'s pieces (its flat space, laid out as
// this rank's) into their places in the whole model's flat space.
void unshard_flat(const ModuleTree& tree, const float* pieces, float* whole, int index);

}  // namespace hybrid::engine
