// Packing units (document_units.h) into one micro-batch of B rows × T tokens.
//
// Greedy, in order: a unit goes into the current row if it fits the rest of it,
// else it starts the next row; the micro-batch closes before the first unit that
// fits in none of the rows left, or that would pass `max_tokens` real tokens or
// `max_units` units (dynamic batching, dynamic_batching.h).
//
// The arrays (B·T int32 each, row-major [B][T]): a unit's tokens are inputs, the
// stream's next tokens are targets, positions count 0, 1, 2, ... from the unit's
// first token. A row's unused tail is padding: inputs = the separator, targets
// = -1 (no loss), positions 0, 1, 2, ... from the tail's start: the padding is a
// pseudo-document of its own, so document-aware attention never links it to
// real tokens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/data/document_units.h"
#include "engine/data/token_dataset.h"

namespace hybrid::engine {

struct PackingLimits {
  int rows = 1;            // B
  int seq_len = 1;         // T: no unit is longer
  int64_t max_tokens = 0;  // real tokens per micro-batch; 0: rows·T
  int max_units = 0;       // units per micro-batch; 0: no limit
};

// Units (sequences), real tokens and padding of a micro-batch or a step.
struct BatchCounts {
  int64_t sequences = 0;
  int64_t real_tokens = 0;
  int64_t padded_tokens = 0;
  BatchCounts& operator+=(const BatchCounts& o) {
    sequences += o.sequences;
    real_tokens += o.real_tokens;
    padded_tokens += o.padded_tokens;
    return *this;
  }
  bool operator==(const BatchCounts&) const = default;
};

struct MicroBatchArrays {
  int32_t* inputs = nullptr;
  int32_t* targets = nullptr;
  int32_t* positions = nullptr;
};

// How many of `units`, from the first, the next micro-batch takes: at least 1
// when `units` is not empty. Throws std::invalid_argument for a unit of no
// tokens or longer than T.
size_t units_in_micro_batch(std::span<const DocumentUnit> units, const PackingLimits& limits);

// Packs exactly `units` (as units_in_micro_batch chose them; std::logic_error
// if they do not fit the rows) and pads the rest. Writes B·T values to each array.
BatchCounts pack_micro_batch(const TokenDataset& data, std::span<const DocumentUnit> units,
                             const PackingLimits& limits, uint32_t separator,
                             const MicroBatchArrays& out);

}  // namespace hybrid::engine
