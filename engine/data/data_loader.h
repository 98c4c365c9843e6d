// Stateless batches over a token stream, so a resumed run reads exactly what an
// uninterrupted one would.
//
// Global step s, micro-step k (0..gas-1), rank r of W, micro batch b, sequence T:
// row i (0..b-1) holds sample j = s·(b·gas·W) + (k·W + r)·b + i, which is the
// T+1 tokens starting at stream position j·T (inputs = the first T, targets =
// the last T), wrapping around the end of the stream. Ranks read disjoint
// samples, and one process with gas·W accumulation steps sees, step for step,
// the same samples as W ranks with gas steps each.
#pragma once

#include <cstdint>
#include <string_view>

#include "engine/data/token_dataset.h"

namespace hybrid::engine {

struct BatchShape {
  int micro_batch = 1;  // b: rows per micro-step on one rank
  int seq_len = 1;      // T
  int grad_accum = 1;   // gas: micro-steps per global step
  int world_size = 1;   // W
  int rank = 0;         // r
};

// Throws std::invalid_argument, `who` first, for a non-positive size or a rank
// outside 0..W-1.
void check_batch_shape(const BatchShape& shape, std::string_view who);

class DataLoader {
 public:
  // Throws std::invalid_argument for a non-positive shape or a rank outside
  // 0..W-1, and DataFileError when the stream holds fewer than T+1 tokens.
  DataLoader(TokenDataset data, BatchShape shape);

  // Fills host buffers of b·T tokens each (row-major [b][T]).
  void fill(int64_t step, int micro_step, int32_t* inputs, int32_t* targets) const;

  // The sample index j of row i (see above).
  int64_t sample_index(int64_t step, int micro_step, int row) const;
  // Stream position of sample j's first token: (j·T) mod size.
  int64_t sample_start(int64_t sample) const;

  int64_t samples_per_step() const;  // b·gas·W
  int64_t tokens_per_step() const { return samples_per_step() * shape_.seq_len; }
  // Global steps until the samples wrap around the stream (at least 1).
  int64_t steps_per_epoch() const;

  const BatchShape& shape() const { return shape_; }
  const TokenDataset& dataset() const { return data_; }

 private:
  TokenDataset data_;
  BatchShape shape_;
};

}  // namespace hybrid::engine
