// One epoch's plan: its documents in the epoch's order (document_order.h), cut
// into units (document_units.h) and packed into micro-batches M_0..M_{K-1}
// (packing.h). Only the boundaries are kept; tokens are copied when a
// micro-batch is filled. The plan depends on the data, B, T, the dynamic
// batching options, the seed and the epoch, never on the rank or the world
// size, so every rank computes the same plan on its own.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/data/document_index.h"
#include "engine/data/document_units.h"
#include "engine/data/packing.h"

namespace hybrid::engine {

struct EpochPlan {
  int64_t epoch = 0;
  std::vector<DocumentUnit> units;         // every unit of the epoch, in reading order
  std::vector<int64_t> batch_begin{0};     // M_m holds units [batch_begin[m], batch_begin[m+1])
  std::vector<int64_t> batch_real_tokens;  // real tokens of M_m

  int64_t micro_batches() const { return int64_t(batch_real_tokens.size()); }
  std::span<const DocumentUnit> micro_batch(int64_t m) const {
    const auto b = size_t(batch_begin[size_t(m)]), e = size_t(batch_begin[size_t(m) + 1]);
    return std::span<const DocumentUnit>(units).subspan(b, e - b);
  }
  int64_t sequences(int64_t m) const { return batch_begin[size_t(m) + 1] - batch_begin[size_t(m)]; }
};

// Packs the units of `order`'s documents greedily into micro-batches. A last
// micro-batch of fewer than `min_batch` units is dropped (its units are not
// read this epoch): the only one that can be short (dynamic_batching.h).
EpochPlan plan_epoch(const DocumentIndex& index, const std::vector<int64_t>& order,
                     const PackingLimits& limits, int min_batch, int64_t epoch);

}  // namespace hybrid::engine
