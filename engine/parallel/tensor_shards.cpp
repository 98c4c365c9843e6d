#include "engine/parallel/tensor_shards.h"

#include <algorithm>

namespace hybrid::engine {

std::vector<float> shard_flat(const ModuleTree& tree, const float* whole) {
  std::vector<float> out(size_t(tree.param_count()));
  for (const ParamSpec* p : tree.params())
    for_each_shard_run(*p, p->shard.index, [&](int64_t local, int64_t full, int64_t n) {
      std::copy_n(whole + p->full_offset + full, size_t(n), out.data() + p->offset + local);
    });
  return out;
}

void unshard_flat(const ModuleTree& tree, const float* pieces, float* whole, int index) {
  for (const ParamSpec* p : tree.params())
    for_each_shard_run(*p, index, [&](int64_t local, int64_t full, int64_t n) {
      std::copy_n(pieces + p->offset + local, size_t(n), whole + p->full_offset + full);
    });
}

}  // namespace hybrid::engine
