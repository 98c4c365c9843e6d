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

int64_t reduce_bucket_capacity(const ModuleTree& tree, int64_t reduce_bucket_elems) {
  const auto shared = shared_parameters(tree);
  int64_t total = 0, largest = 1;
  for (auto* m : tree.modules()) {
    int64_t n = 0;
    for (auto* p : m->own_params())
      if (!shared[size_t(p->id)]) n += p->numel;
    total += n;
    largest = std::max(largest, n);
  }
  return std::max(largest, std::min(reduce_bucket_elems, std::max<int64_t>(total, 1)));
}

}  // namespace hybrid::engine
