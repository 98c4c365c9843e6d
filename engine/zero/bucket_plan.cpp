#include "engine/zero/bucket_plan.h"

#include <algorithm>

namespace hybrid::engine {

std::vector<bool> shared_parameters(const ModuleTree& tree) {
  std::vector<int> users(tree.params().size(), 0);
  for (auto* m : tree.modules())
    for (auto* p : m->used_params()) ++users[size_t(p->id)];
  std::vector<bool> shared(users.size());
  for (size_t i = 0; i < users.size(); ++i) shared[i] = users[i] > 1;
  return shared;
}

namespace {

// The gradients a module's backward puts into one bucket: its own, unshared.
int64_t unshared_numel(const Module& m, const std::vector<bool>& shared) {
  int64_t n = 0;
  for (auto* p : m.own_params())
    if (!shared[size_t(p->id)]) n += p->numel;
  return n;
}

}  // namespace

int64_t reduce_bucket_capacity(const ModuleTree& tree, int64_t reduce_bucket_elems) {
  const auto shared = shared_parameters(tree);
  int64_t total = 0, largest = 1;
  for (auto* m : tree.modules()) {
    const int64_t n = unshared_numel(*m, shared);
    total += n;
    largest = std::max(largest, n);
  }
  return std::max(largest, std::min(reduce_bucket_elems, std::max<int64_t>(total, 1)));
}

ReductionBuckets reduction_buckets(const ModuleTree& tree, int64_t reduce_bucket_elems) {
  const auto shared = shared_parameters(tree);
  const int64_t cap = reduce_bucket_capacity(tree, reduce_bucket_elems);
  ReductionBuckets out;
  std::vector<int64_t>& sizes = out.during_backward;
  int64_t open = 0;
  for (auto it = tree.modules().rbegin(); it != tree.modules().rend(); ++it) {
    const int64_t n = unshared_numel(**it, shared);
    if (n == 0) continue;
    if (open > 0 && open + n <= cap) {
      open += n;
      continue;
    }
    if (open > 0) sizes.push_back(open);
    open = n;
  }
  if (open > 0) sizes.push_back(open);
  for (auto* p : tree.params())
    if (shared[size_t(p->id)] && p->numel > 0) out.after_backward.push_back(p->numel);
  return out;
}

}  // namespace hybrid::engine
