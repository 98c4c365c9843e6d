#include "profiler/tables/module_rollup.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <utility>

#include "profiler/columns.h"

namespace hybrid::profiler {

namespace {

// The costs a container sums over its children, each with the LayerStat counter
// a module's own row starts it from (calls is not summed: containers keep 0).
constexpr auto kSummedCosts = std::tuple{
    std::pair{&ModuleCost::fwd_ns, &LayerStat::fwd_ns},
    std::pair{&ModuleCost::bwd_ns, &LayerStat::bwd_ns},
    std::pair{&ModuleCost::fwd_flops, &LayerStat::fwd_flops},
    std::pair{&ModuleCost::bwd_flops, &LayerStat::bwd_flops},
    std::pair{&ModuleCost::fwd_macs, &LayerStat::fwd_macs},
    std::pair{&ModuleCost::bwd_macs, &LayerStat::bwd_macs},
    std::pair{&ModuleCost::host_fwd_ns, &LayerStat::host_fwd_ns},
    std::pair{&ModuleCost::host_bwd_ns, &LayerStat::host_bwd_ns},
    std::pair{&ModuleCost::recompute_ns, &LayerStat::recompute_ns},
    std::pair{&ModuleCost::recompute_flops, &LayerStat::recompute_flops},
    std::pair{&ModuleCost::host_recompute_ns, &LayerStat::host_recompute_ns},
};

ModuleCost own_cost(const LayerStat& l) {
  ModuleCost c;
  columns::for_each(kSummedCosts, [&](const auto& p) { c.*p.first = double(l.*p.second); });
  c.calls = double(l.calls);
  return c;
}

// What a container without a row of its own costs: its children's sum (calls stay 0).
void add_child(ModuleCost& sum, const ModuleCost& c) {
  columns::for_each(kSummedCosts, [&](const auto& p) { sum.*p.first += c.*p.first; });
}

void link_children(ModuleTree& t) {
  t.children.assign(t.modules.size(), {});
  for (size_t i = 0; i < t.modules.size(); ++i) {
    const size_t parent = t.parent(i);
    if (parent != ModuleTree::npos)
      t.children[parent].push_back(i);
    else
      t.roots.push_back(i);
  }
}

// Preorder and subtree sums; `seen` guards against a cyclic parent table.
void walk_subtrees(ModuleTree& t) {
  t.params.assign(t.modules.size(), 0);
  t.activation_bytes.assign(t.modules.size(), 0);
  std::vector<char> seen(t.modules.size(), 0);
  auto visit = [&](auto&& self, size_t i) -> void {
    if (seen[i]) return;
    seen[i] = 1;
    t.preorder.push_back(i);
    t.params[i] = t.modules[i].n_params;
    t.activation_bytes[i] = t.modules[i].activation_bytes;
    for (size_t c : t.children[i]) {
      self(self, c);
      t.params[i] += t.params[c];
      t.activation_bytes[i] += t.activation_bytes[c];
    }
  };
  for (size_t r : t.roots) visit(visit, r);
}

std::vector<ModuleCost> rank_costs(const ModuleTree& t, const RunProfile& p, int64_t step,
                                   int rank) {
  std::vector<std::optional<ModuleCost>> own(t.modules.size());
  for (const LayerStat& l : p.layers)
    if (l.step == step && l.rank == rank) own[t.index.at(l.module_id)] = own_cost(l);
  std::vector<ModuleCost> eff(t.modules.size());
  // Reverse preorder visits children before their parents.
  for (auto it = t.preorder.rbegin(); it != t.preorder.rend(); ++it) {
    const size_t i = *it;
    ModuleCost sum;
    for (size_t c : t.children[i]) add_child(sum, eff[c]);
    eff[i] = own[i] ? *own[i] : sum;
  }
  return eff;
}

}  // namespace

size_t ModuleTree::find(int32_t module_id) const {
  auto it = index.find(module_id);
  return it == index.end() ? npos : it->second;
}

size_t ModuleTree::parent(size_t i) const {
  if (modules[i].parent_id < 0) return npos;
  const size_t p = find(modules[i].parent_id);
  return p == i ? npos : p;
}

ModuleTree build_module_tree(const RunProfile& p, int64_t step) {
  ModuleTree t;
  t.modules = p.modules;
  std::stable_sort(t.modules.begin(), t.modules.end(),
                   [](const ModuleInfo& a, const ModuleInfo& b) { return a.id < b.id; });
  for (size_t i = 0; i < t.modules.size(); ++i) t.index[t.modules[i].id] = i;
  for (const LayerStat& l : p.layers)
    if (l.step == step && !t.index.count(l.module_id)) {
      t.index[l.module_id] = t.modules.size();
      t.modules.push_back({l.module_id, -1, fmt::format("#{}", l.module_id), "?", 0, 0, 0});
    }
  link_children(t);
  walk_subtrees(t);
  return t;
}

std::vector<int> ranks_in_step(const RunProfile& p, int64_t step) {
  std::set<int> ranks;
  for (const LayerStat& l : p.layers)
    if (l.step == step) ranks.insert(l.rank);
  return {ranks.begin(), ranks.end()};
}

ModuleRollup rollup_modules(const RunProfile& p, int64_t step,
                            std::optional<std::vector<int>> ranks) {
  ModuleRollup r;
  r.step = step;
  r.tree = build_module_tree(p, step);
  r.ranks = ranks ? std::move(*ranks) : ranks_in_step(p, step);
  for (int rank : r.ranks) r.cost.push_back(rank_costs(r.tree, p, step, rank));
  return r;
}

}  // namespace hybrid::profiler
