// Facts about the parameter layout that the gradient reducer and the memory
// model must agree on: which parameters are shared (tied) and how large a
// reduction bucket is.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model/module.h"

namespace hybrid::engine {

// By parameter id: used by more than one module (e.g. GPT-2's tied embedding).
std::vector<bool> shared_parameters(const ModuleTree& tree);

// Elements of one reduction bucket: reduce_bucket_size, but never more than all
// unshared gradients together and never less than the largest module's
// unshared gradients (a module's gradients enter one bucket as a whole).
int64_t reduce_bucket_capacity(const ModuleTree& tree, int64_t reduce_bucket_elems);

// The buckets the gradient reducer fills, in elements: during backward in the
// order it fills them (modules in reverse, each module's unshared gradients
// whole, neighbours joined up to the capacity), and each shared parameter's,
// reduced once backward is done. For the cost model (autotune/).
struct ReductionBuckets {
  std::vector<int64_t> during_backward;
  std::vector<int64_t> after_backward;
};
ReductionBuckets reduction_buckets(const ModuleTree& tree, int64_t reduce_bucket_elems);

}  // namespace hybrid::engine
