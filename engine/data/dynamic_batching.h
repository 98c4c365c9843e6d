// Dynamic batching (hybrid.data.dynamic_batching), DeepSpeed's variable batch
// size (deepspeed/runtime/data_pipeline/data_sampling/variable_batch_size_and_lr.py,
// batch_by_seqlens and scale_lr): micro-batches are formed by a budget of real
// tokens, so they hold more short documents and fewer long ones, and the
// learning rate of each step is scaled by the step's batch size (its number of
// sequences, over all micro-batches and ranks).
//
// A micro-batch closes before the unit that would pass `max_tokens` real tokens
// or `max_batch` units, or that fits in none of its B rows of T (packing.h).
//
// Why every micro-batch holds at least min_batch units, given the checks of
// validate_dynamic_batching (min_batch <= max_batch, min_batch <= B,
// min_batch·T <= max_tokens): a unit holds at most T tokens, and greedy packing
// puts each unit in the current row or the next, so n units use at most n rows
// and hold at most n·T tokens. With n < min_batch units placed, the next unit
// still has a free row (n + 1 <= min_batch <= B), stays within the budget
// ((n + 1)·T <= min_batch·T <= max_tokens) and within the count (n + 1 <=
// min_batch <= max_batch), so it is taken. Only the epoch's last micro-batch
// can run out of units first; the epoch plan drops it then, as DeepSpeed drops
// a last micro-batch that breaks the limits.
#pragma once

#include <cstdint>
#include <string_view>

#include "engine/config/config.h"
#include "engine/data/packing.h"

namespace hybrid::engine {

struct DynamicBatchOptions {
  int64_t max_tokens = 0;  // real tokens per micro-batch; 0: off (rows fill, min/max unused)
  int min_batch = 1;       // units per micro-batch, at least
  int max_batch = 0;       // units per micro-batch, at most; 0: no limit
  bool enabled() const { return max_tokens != 0; }
};

// The loader's options for hybrid.data.dynamic_batching (off when not enabled;
// max_tokens 0 there: the rows' rows·seq_len tokens).
DynamicBatchOptions dynamic_batch_options(const DynamicBatching& config, int rows, int seq_len);

// When enabled, checks min_batch >= 1, min_batch <= max_batch (max_batch > 0),
// min_batch <= rows and min_batch·seq_len <= max_tokens <= rows·seq_len (and
// max_batch >= 0); throws std::invalid_argument naming the key
// (hybrid.data.dynamic_batching.<key>) and its value.
void validate_dynamic_batching(const DynamicBatchOptions& options, int rows, int seq_len);

// The packing limits of B rows × T with these options.
PackingLimits packing_limits(const DynamicBatchOptions& options, int rows, int seq_len);

// The learning-rate factor for a step of `batch_size` sequences when the base
// learning rate was set for `base_batch_size` (DeepSpeed's scale_lr):
// "none" → 1, "linear" → batch/base, "sqrt" → sqrt(batch/base). Throws
// std::invalid_argument naming hybrid.data.dynamic_batching.lr_scaling for
// another method, and for a base batch size below 1 or a negative batch size.
double lr_scale(std::string_view method, int64_t batch_size, int64_t base_batch_size);

}  // namespace hybrid::engine
