#include "gui/model/layer_breakdown.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "profiler/tables/module_rollup.h"
#include "profiler/tables/step_accounting.h"

namespace hybrid::gui {

namespace {

using profiler::LayerStat;
using profiler::ModuleInfo;
using profiler::ModuleTree;
using profiler::RankStepAccount;
using profiler::WaitSplit;

constexpr double kMsPerNs = 1e-6;

// A module's cost on one rank in ms, with the waits inside its scopes.
struct Cost {
  double fwd_ms = 0, bwd_ms = 0, fwd_flops = 0, bwd_flops = 0, calls = 0;
  double rc_ms = 0, rc_flops = 0, host_rc_ms = 0;  // recomputation (activation checkpointing)
  double host_fwd_ms = 0, host_bwd_ms = 0;         // the scopes' host time (= fwd/bwd on a CPU)
  WaitSplit waits_fwd, waits_bwd, waits_rc;        // inclusive of children
  double total_ms() const { return fwd_ms + bwd_ms + rc_ms; }
};

Cost to_ms(const profiler::ModuleCost& m) {
  Cost c;
  c.fwd_ms = m.fwd_ns * kMsPerNs;
  c.bwd_ms = m.bwd_ns * kMsPerNs;
  c.fwd_flops = m.fwd_flops;
  c.bwd_flops = m.bwd_flops;
  c.calls = m.calls;
  c.host_fwd_ms = m.host_fwd_ns * kMsPerNs;
  c.host_bwd_ms = m.host_bwd_ns * kMsPerNs;
  c.rc_ms = m.recompute_ns * kMsPerNs;
  c.rc_flops = m.recompute_flops;
  c.host_rc_ms = m.host_recompute_ns * kMsPerNs;
  return c;
}

// One rank's module costs (the data layer's rollup) with the waits booked to each
// module's own scopes added up the tree.
std::vector<Cost> rank_costs(const ModuleTree& t, const std::vector<profiler::ModuleCost>& rolled,
                             const RankStepAccount* account) {
  std::vector<Cost> eff(t.modules.size());
  for (size_t i = 0; i < eff.size(); ++i) eff[i] = to_ms(rolled[i]);
  if (account)
    for (const auto& [module_id, w] : account->module_waits) {
      const size_t i = t.find(module_id);
      if (i == ModuleTree::npos) continue;
      eff[i].waits_fwd += w.fwd;
      eff[i].waits_bwd += w.bwd;
      eff[i].waits_rc += w.recompute;
    }
  // Reverse preorder visits children before parents.
  for (auto it = t.preorder.rbegin(); it != t.preorder.rend(); ++it)
    for (size_t c : t.children[*it]) {
      eff[*it].waits_fwd += eff[c].waits_fwd;
      eff[*it].waits_bwd += eff[c].waits_bwd;
      eff[*it].waits_rc += eff[c].waits_rc;
    }
  return eff;
}

double mean_of(const std::vector<double>& v) { return Spread::of(v).mean; }

// The step shown by default: the last one whose rows hold any time. An imported
// trace's last step is usually cut off: its scopes are there, its device records not.
int64_t default_step(const profiler::RunProfile& p, const std::set<int64_t>& steps) {
  std::set<int64_t> timed;
  for (const LayerStat& l : p.layers)
    if (l.fwd_ns + l.bwd_ns + l.recompute_ns > 0) timed.insert(l.step);
  return timed.empty() ? *steps.rbegin() : *timed.rbegin();
}

// Fills profiled_steps, step, ranks_with_stats and ranks; false when the run has no
// layer stats. Throws when the options name a step or rank without stats.
bool select_step_and_ranks(LayerBreakdown& b, const profiler::RunProfile& p,
                           const LayerOptions& o) {
  std::set<int64_t> steps;
  for (const LayerStat& l : p.layers) steps.insert(l.step);
  b.profiled_steps.assign(steps.begin(), steps.end());
  if (steps.empty()) {
    if (o.step)
      throw std::invalid_argument(
          fmt::format("layer breakdown: run {} has no layer stats (step {})", p.run.id, *o.step));
    return false;
  }
  b.step = o.step.value_or(default_step(p, steps));
  if (!steps.count(b.step))
    throw std::invalid_argument(
        fmt::format("layer breakdown: run {} has no layer stats for step {}", p.run.id, b.step));
  b.ranks_with_stats = profiler::ranks_in_step(p, b.step);
  b.ranks = b.ranks_with_stats;
  if (o.rank) {
    if (!std::binary_search(b.ranks.begin(), b.ranks.end(), *o.rank))
      throw std::invalid_argument(
          fmt::format("layer breakdown: run {} has no layer stats of rank {} in step {}", p.run.id,
                      *o.rank, b.step));
    b.ranks = {*o.rank};
  }
  return true;
}

// The top-level parts of the step besides the modules, per rank (ms).
struct StepParts {
  std::vector<double> optimizer, optimizer_exposed, optimizer_blocked, outside, blocked, other,
      total;
  bool measured_everywhere = true, measured_somewhere = false;

  // `account` holds the host events' figures (null: none, or rows in device time,
  // which host scopes and waits do not describe); `measured` is the step's time.
  void add_rank(double modules_ms, const RankStepAccount* account, std::optional<double> measured) {
    const double opt = account ? account->optimizer_ms : 0;
    const double out = account ? account->outside_waits.exposed_ms : 0;
    const double blk = account ? account->outside_waits.blocked_ms : 0;
    const double attributed = modules_ms + opt + out + blk;
    const double rest = measured ? std::max(0.0, *measured - attributed) : 0.0;
    measured_everywhere = measured_everywhere && measured.has_value();
    measured_somewhere = measured_somewhere || measured.has_value();
    optimizer.push_back(opt);
    optimizer_exposed.push_back(account ? account->optimizer_waits.exposed_ms : 0);
    optimizer_blocked.push_back(account ? account->optimizer_waits.blocked_ms : 0);
    outside.push_back(out);
    blocked.push_back(blk);
    other.push_back(rest);
    total.push_back(attributed + rest);
  }
};

LayerRow module_row(const ModuleTree& tree, size_t i, const std::vector<std::vector<Cost>>& costs) {
  auto per_rank = [&](auto field) {
    std::vector<double> v;
    for (const auto& c : costs) v.push_back(field(c[i]));
    return v;
  };
  const ModuleInfo& m = tree.modules[i];
  LayerRow row;
  row.kind = LayerRowKind::module;
  row.module_id = m.id;
  row.name = m.name.empty() ? "model" : m.name;
  row.type = m.type;
  row.depth = m.depth;
  row.fwd_ms = Spread::of(per_rank([](const Cost& c) { return c.fwd_ms; }));
  row.bwd_ms = Spread::of(per_rank([](const Cost& c) { return c.bwd_ms; }));
  row.recompute_ms = Spread::of(per_rank([](const Cost& c) { return c.rc_ms; }));
  row.total_ms = Spread::of(per_rank([](const Cost& c) { return c.total_ms(); }));
  row.host_fwd_ms = Spread::of(per_rank([](const Cost& c) { return c.host_fwd_ms; }));
  row.host_bwd_ms = Spread::of(per_rank([](const Cost& c) { return c.host_bwd_ms; }));
  row.host_recompute_ms = Spread::of(per_rank([](const Cost& c) { return c.host_rc_ms; }));
  row.exposed_ms = Spread::of(per_rank([](const Cost& c) {
    return c.waits_fwd.exposed_ms + c.waits_bwd.exposed_ms + c.waits_rc.exposed_ms;
  }));
  row.blocked_ms = Spread::of(per_rank([](const Cost& c) {
    return c.waits_fwd.blocked_ms + c.waits_bwd.blocked_ms + c.waits_rc.blocked_ms;
  }));
  row.fwd_flops = mean_of(per_rank([](const Cost& c) { return c.fwd_flops; }));
  row.bwd_flops = mean_of(per_rank([](const Cost& c) { return c.bwd_flops; }));
  row.recompute_flops = mean_of(per_rank([](const Cost& c) { return c.rc_flops; }));
  row.calls = std::llround(mean_of(per_rank([](const Cost& c) { return c.calls; })));
  const double flops = row.fwd_flops + row.bwd_flops + row.recompute_flops;
  row.flops_per_s = row.total_ms.mean > 0 ? flops / (row.total_ms.mean * 1e-3) : 0;
  row.params = tree.params[i];
  row.activation_bytes = tree.activation_bytes[i];
  // Bar: compute (the scope minus its waits), waits with no collective in
  // flight (grey), exposed communication (red).
  const double wait_fwd = mean_of(per_rank([](const Cost& c) { return c.waits_fwd.total_ms(); }));
  const double wait_bwd = mean_of(per_rank([](const Cost& c) { return c.waits_bwd.total_ms(); }));
  const double wait_rc = mean_of(per_rank([](const Cost& c) { return c.waits_rc.total_ms(); }));
  row.bar.forward = std::max(0.0, row.fwd_ms.mean - wait_fwd);
  row.bar.backward = std::max(0.0, row.bwd_ms.mean - wait_bwd);
  row.bar.recompute = std::max(0.0, row.recompute_ms.mean - wait_rc);
  row.bar.other = row.blocked_ms.mean;
  row.bar.exposed = row.exposed_ms.mean;
  return row;
}

// Module rows in preorder, as a tree of row indices.
void add_module_rows(LayerBreakdown& b, const ModuleTree& tree,
                     const std::vector<std::vector<Cost>>& costs) {
  std::vector<int> row_of(tree.modules.size(), -1);
  for (size_t i : tree.preorder) {
    LayerRow row = module_row(tree, i, costs);
    if (const size_t parent = tree.parent(i); parent != ModuleTree::npos)
      row.parent = row_of[parent];
    row_of[i] = int(b.rows.size());
    if (row.parent >= 0)
      b.rows[size_t(row.parent)].children.push_back(row_of[i]);
    else
      b.top_rows.push_back(row_of[i]);
    b.rows.push_back(std::move(row));
  }
}

// The rows that complete the step after the modules (optimizer, waits, other).
void add_step_rows(LayerBreakdown& b, const StepParts& parts) {
  const std::vector<double> none(b.ranks.size(), 0.0);
  auto add = [&](LayerRowKind kind, std::string name, std::string type,
                 const std::vector<double>& ms, const std::vector<double>& exposed,
                 const std::vector<double>& blocked_waits) {
    LayerRow row;
    row.kind = kind;
    row.name = std::move(name);
    row.type = std::move(type);
    row.total_ms = Spread::of(ms);
    row.exposed_ms = Spread::of(exposed);
    row.blocked_ms = Spread::of(blocked_waits);
    row.bar.exposed = row.exposed_ms.mean;
    row.bar.other = std::max(0.0, row.total_ms.mean - row.exposed_ms.mean);
    b.top_rows.push_back(int(b.rows.size()));
    b.rows.push_back(std::move(row));
  };
  if (b.has_events) {
    add(LayerRowKind::optimizer, "optimizer", "step", parts.optimizer, parts.optimizer_exposed,
        parts.optimizer_blocked);
    add(LayerRowKind::exposed_comm, "exposed comm", "outside modules", parts.outside, parts.outside,
        none);
    if (std::any_of(parts.blocked.begin(), parts.blocked.end(), [](double v) { return v > 0; }))
      add(LayerRowKind::blocked_comm, "comm wait (idle)", "no collective", parts.blocked, none,
          parts.blocked);
  }
  if (parts.measured_somewhere)
    add(LayerRowKind::other, "other",
        b.device_times ? "device idle / unattributed" : "unattributed", parts.other, none, none);
}

}  // namespace

int LayerBreakdown::find_module(int32_t module_id) const {
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].kind == LayerRowKind::module && rows[i].module_id == module_id) return int(i);
  return -1;
}

int LayerBreakdown::find_name(std::string_view name) const {
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].name == name) return int(i);
  return -1;
}

namespace {

// Each rank's account of the step from its events (only the ranks shown).
std::map<int, RankStepAccount> step_accounts(const profiler::EventSet& events,
                                             const LayerBreakdown& b) {
  const std::set<int> rank_set(b.ranks.begin(), b.ranks.end());
  std::map<int, RankStepAccount> accounts;
  for (auto& a : account_step(events, b.step))
    if (rank_set.count(a.rank)) accounts[a.rank] = std::move(a);
  return accounts;
}

std::optional<double> step_row_ms(const profiler::RunProfile& p, int64_t step) {
  std::optional<double> ms;
  for (const auto& s : p.steps)
    if (s.step == step) ms = s.step_ms;
  return ms;
}

void finish_shares(LayerBreakdown& b) {
  const double step_mean = b.step_ms.mean;
  for (LayerRow& row : b.rows) row.share = step_mean > 0 ? row.total_ms.mean / step_mean : 0.0;
  for (const LayerRow& row : b.rows)
    if (row.kind == LayerRowKind::module && row.recompute_ms.mean > 0) b.has_recompute = true;
  for (const LayerRow& row : b.rows)
    if (row.kind == LayerRowKind::module &&
        (row.host_fwd_ms.mean != row.fwd_ms.mean || row.host_bwd_ms.mean != row.bwd_ms.mean ||
         row.host_recompute_ms.mean != row.recompute_ms.mean))
      b.host_differs = b.device_times;
}

}  // namespace

LayerBreakdown build_layer_breakdown(const profiler::RunProfile& p,
                                     const profiler::EventSet& events, const LayerOptions& o) {
  LayerBreakdown b;
  b.run_id = p.run.id;
  b.device_times = p.run.backend == "cuda";
  if (!select_step_and_ranks(b, p, o)) return b;
  const profiler::ModuleRollup rollup = profiler::rollup_modules(p, b.step, b.ranks);
  const std::map<int, RankStepAccount> accounts = step_accounts(events, b);
  // Host scopes and waits measure the host: beside device times they only give the step's time.
  b.has_events = !accounts.empty() && !b.device_times;
  const std::optional<double> row_ms = step_row_ms(p, b.step);

  std::vector<std::vector<Cost>> costs;  // [rank][module]
  StepParts parts;
  for (size_t k = 0; k < b.ranks.size(); ++k) {
    auto acc = accounts.find(b.ranks[k]);
    const RankStepAccount* account = acc == accounts.end() ? nullptr : &acc->second;
    costs.push_back(rank_costs(rollup.tree, rollup.cost[k], b.has_events ? account : nullptr));
    double modules_ms = 0;
    for (size_t root : rollup.tree.roots) modules_ms += costs.back()[root].total_ms();
    const std::optional<double> measured =
        account && account->step_event_ms ? account->step_event_ms : row_ms;
    parts.add_rank(modules_ms, b.has_events ? account : nullptr, measured);
  }
  b.step_measured = parts.measured_everywhere;
  b.step_ms = Spread::of(parts.total);
  add_module_rows(b, rollup.tree, costs);
  add_step_rows(b, parts);
  finish_shares(b);
  return b;
}

}  // namespace hybrid::gui
