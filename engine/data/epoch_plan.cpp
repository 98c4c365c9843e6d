#include "engine/data/epoch_plan.h"

namespace hybrid::engine {

EpochPlan plan_epoch(const DocumentIndex& index, const std::vector<int64_t>& order,
                     const PackingLimits& limits, int min_batch, int64_t epoch) {
  EpochPlan plan;
  plan.epoch = epoch;
  plan.units.reserve(order.size());
  for (int64_t d : order) append_units(index, d, limits.seq_len, plan.units);
  const std::span<const DocumentUnit> all(plan.units);
  size_t at = 0;
  while (at < all.size()) {
    const size_t n = units_in_micro_batch(all.subspan(at), limits);
    if (int64_t(n) < min_batch) break;  // the epoch's tail: fewer than min_batch units left
    int64_t tokens = 0;
    for (size_t i = at; i < at + n; ++i) tokens += all[i].length;
    at += n;
    plan.batch_begin.push_back(int64_t(at));
    plan.batch_real_tokens.push_back(tokens);
  }
  return plan;
}

}  // namespace hybrid::engine
