// The module tree of a run with every module's cost per rank in one profiled
// step: what the flops report and the viewer's layer breakdown both show.
// Layer stats are inclusive (a module's time and FLOPs include its children's);
// a module without a row of its own (a container the profiler did not time)
// costs what its children do. Stats of modules the run's table does not know
// still count, as roots named "#<id>".
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "profiler/profile_data.h"

namespace hybrid::profiler {

// A module's cost on one rank in one step, inclusive of its children.
struct ModuleCost {
  double fwd_ns = 0, bwd_ns = 0;
  double fwd_flops = 0, bwd_flops = 0;
  double fwd_macs = 0, bwd_macs = 0;
  double host_fwd_ns = 0, host_bwd_ns = 0;  // the scopes' host time (= fwd/bwd on a CPU)
  double recompute_ns = 0, recompute_flops = 0, host_recompute_ns = 0;  // activation checkpointing
  double calls = 0;  // forward invocations; 0 for a container without a row of its own
};

struct ModuleTree {
  static constexpr size_t npos = size_t(-1);

  std::vector<ModuleInfo> modules;            // by id, then the unknown ones
  std::unordered_map<int32_t, size_t> index;  // module id → position in `modules`
  std::vector<std::vector<size_t>> children;
  std::vector<size_t> roots;
  std::vector<size_t> preorder;            // roots and their subtrees, parents before children
  std::vector<uint64_t> params;            // n_params of the subtree
  std::vector<uint64_t> activation_bytes;  // activation_bytes of the subtree

  size_t find(int32_t module_id) const;
  size_t parent(size_t i) const;  // npos for a root
};

// The tree of `profile.modules`, plus the modules that only `step`'s layer stats
// name. A module that is its own parent is a root; modules on a parent cycle are
// left out of `roots` and `preorder`.
ModuleTree build_module_tree(const RunProfile& profile, int64_t step);

struct ModuleRollup {
  int64_t step = 0;
  ModuleTree tree;
  std::vector<int> ranks;                     // the ranks rolled up, ascending
  std::vector<std::vector<ModuleCost>> cost;  // [index into ranks][module]

  // One field of module i on every rank (in `ranks` order).
  template <class Field>
  std::vector<double> per_rank(size_t i, Field field) const {
    std::vector<double> v;
    v.reserve(cost.size());
    for (const auto& c : cost) v.push_back(field(c[i]));
    return v;
  }
  // One field of the whole model (the sum over the roots) on every rank.
  template <class Field>
  std::vector<double> model_per_rank(Field field) const {
    std::vector<double> v;
    v.reserve(cost.size());
    for (const auto& c : cost) {
      double sum = 0;
      for (size_t root : tree.roots) sum += field(c[root]);
      v.push_back(sum);
    }
    return v;
  }
};

// The ranks with layer stats in `step`, ascending.
std::vector<int> ranks_in_step(const RunProfile& profile, int64_t step);

// Costs of every module in `step` on each of `ranks` (default: ranks_in_step).
ModuleRollup rollup_modules(const RunProfile& profile, int64_t step,
                            std::optional<std::vector<int>> ranks = std::nullopt);

}  // namespace hybrid::profiler
