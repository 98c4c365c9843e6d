// One micro-batch as the engine takes it: host arrays of [micro_batch, T].
#pragma once

#include <cstdint>

namespace hybrid::engine {

struct MicroBatch {
  const int32_t* inputs = nullptr;
  // A negative target is none (a packed row's padding): no loss, no gradient;
  // the micro-batch's loss is the mean over its real targets.
  const int32_t* targets = nullptr;
  // Each token's position in its document when rows pack several documents
  // (attention stays inside a document, positions restart at 0); null: every
  // row is one document, positions 0..T-1.
  const int32_t* positions = nullptr;
};

// The real (non-negative) targets among n, at least 1: the loss's denominator.
inline int64_t real_targets(const int32_t* targets, int64_t n) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) count += targets[i] >= 0;
  return count > 0 ? count : 1;
}

}  // namespace hybrid::engine
