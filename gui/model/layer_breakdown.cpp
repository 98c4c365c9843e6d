#include "gui/model/layer_breakdown.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "gui/model/step_accounting.h"

namespace hybrid::gui {

namespace {

using profiler::LayerStat;
using profiler::ModuleInfo;

constexpr double kMsPerNs = 1e-6;

// A module's cost on one rank (ms and FLOPs); containers without a row of their
// own cost what their children do (LayerStat values are inclusive).
struct Cost {
  double fwd_ms = 0, bwd_ms = 0, fwd_flops = 0, bwd_flops = 0, calls = 0;
  double host_fwd_ms = 0, host_bwd_ms = 0;  // the scopes' host time (= fwd/bwd on a CPU)
  WaitSplit waits_fwd, waits_bwd;  // inclusive of children
};

struct Tree {
  std::vector<ModuleInfo> modules;
  std::unordered_map<int32_t, size_t> index;
  std::vector<std::vector<size_t>> children;
  std::vector<size_t> roots;
  std::vector<size_t> preorder;
  std::vector<uint64_t> params, activations;  // subtree sums
};

Tree make_tree(const profiler::RunProfile& p, int64_t step) {
  Tree t;
  t.modules = p.modules;
  std::stable_sort(t.modules.begin(), t.modules.end(),
                   [](const ModuleInfo& a, const ModuleInfo& b) { return a.id < b.id; });
  for (size_t i = 0; i < t.modules.size(); ++i) t.index[t.modules[i].id] = i;
  // Stats of modules the table does not know still count, as roots.
  for (const LayerStat& l : p.layers)
    if (l.step == step && !t.index.count(l.module_id)) {
      t.index[l.module_id] = t.modules.size();
      t.modules.push_back({l.module_id, -1, fmt::format("#{}", l.module_id), "?", 0, 0, 0});
    }
  t.children.resize(t.modules.size());
  for (size_t i = 0; i < t.modules.size(); ++i) {
    auto parent = t.index.find(t.modules[i].parent_id);
    if (t.modules[i].parent_id >= 0 && parent != t.index.end() && parent->second != i)
      t.children[parent->second].push_back(i);
    else
      t.roots.push_back(i);
  }
  t.params.assign(t.modules.size(), 0);
  t.activations.assign(t.modules.size(), 0);
  std::vector<char> seen(t.modules.size(), 0);  // guards against a cyclic parent table
  auto visit = [&](auto&& self, size_t i) -> void {
    if (seen[i]) return;
    seen[i] = 1;
    t.preorder.push_back(i);
    t.params[i] = t.modules[i].n_params;
    t.activations[i] = t.modules[i].activation_bytes;
    for (size_t c : t.children[i]) {
      self(self, c);
      t.params[i] += t.params[c];
      t.activations[i] += t.activations[c];
    }
  };
  for (size_t r : t.roots) visit(visit, r);
  return t;
}

// Per-rank costs of every module, containers resolved from their children, waits
// added up the tree.
std::vector<Cost> rank_costs(const Tree& t, const profiler::RunProfile& p, int64_t step, int rank,
                             const RankStepAccount* account) {
  std::vector<std::optional<Cost>> own(t.modules.size());
  for (const LayerStat& l : p.layers) {
    if (l.step != step || l.rank != rank) continue;
    Cost c;
    c.fwd_ms = double(l.fwd_ns) * kMsPerNs;
    c.bwd_ms = double(l.bwd_ns) * kMsPerNs;
    c.fwd_flops = double(l.fwd_flops);
    c.bwd_flops = double(l.bwd_flops);
    c.calls = double(l.calls);
    c.host_fwd_ms = double(l.host_fwd_ns) * kMsPerNs;
    c.host_bwd_ms = double(l.host_bwd_ns) * kMsPerNs;
    own[t.index.at(l.module_id)] = c;
  }
  std::vector<Cost> eff(t.modules.size());
  std::vector<WaitSplit> waits_fwd(t.modules.size()), waits_bwd(t.modules.size());
  if (account)
    for (const auto& [module_id, w] : account->module_waits) {
      auto it = t.index.find(module_id);
      if (it == t.index.end()) continue;
      waits_fwd[it->second] += w.fwd;
      waits_bwd[it->second] += w.bwd;
    }
  // Reverse preorder visits children before parents.
  for (auto it = t.preorder.rbegin(); it != t.preorder.rend(); ++it) {
    const size_t i = *it;
    Cost sum;
    WaitSplit wf = waits_fwd[i], wb = waits_bwd[i];
    for (size_t c : t.children[i]) {
      sum.fwd_ms += eff[c].fwd_ms;
      sum.bwd_ms += eff[c].bwd_ms;
      sum.fwd_flops += eff[c].fwd_flops;
      sum.bwd_flops += eff[c].bwd_flops;
      sum.host_fwd_ms += eff[c].host_fwd_ms;
      sum.host_bwd_ms += eff[c].host_bwd_ms;
      wf += eff[c].waits_fwd;
      wb += eff[c].waits_bwd;
    }
    eff[i] = own[i] ? *own[i] : sum;
    eff[i].waits_fwd = wf;
    eff[i].waits_bwd = wb;
  }
  return eff;
}

double mean_of(const std::vector<double>& v) { return Spread::of(v).mean; }

// The step shown by default: the last one whose rows hold any time. An imported
// trace's last step is usually cut off: its scopes are there, its device records not.
int64_t default_step(const profiler::RunProfile& p, const std::set<int64_t>& steps) {
  std::set<int64_t> timed;
  for (const LayerStat& l : p.layers)
    if (l.fwd_ns + l.bwd_ns > 0) timed.insert(l.step);
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
  std::set<int> rank_set;
  for (const LayerStat& l : p.layers)
    if (l.step == b.step) rank_set.insert(l.rank);
  b.ranks_with_stats.assign(rank_set.begin(), rank_set.end());
  if (o.rank) {
    if (!rank_set.count(*o.rank))
      throw std::invalid_argument(fmt::format(
          "layer breakdown: run {} has no layer stats of rank {} in step {}", p.run.id, *o.rank,
          b.step));
    rank_set = {*o.rank};
  }
  b.ranks.assign(rank_set.begin(), rank_set.end());
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

LayerRow module_row(const Tree& tree, size_t i, const std::vector<std::vector<Cost>>& costs) {
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
  row.total_ms = Spread::of(per_rank([](const Cost& c) { return c.fwd_ms + c.bwd_ms; }));
  row.host_fwd_ms = Spread::of(per_rank([](const Cost& c) { return c.host_fwd_ms; }));
  row.host_bwd_ms = Spread::of(per_rank([](const Cost& c) { return c.host_bwd_ms; }));
  row.exposed_ms = Spread::of(
      per_rank([](const Cost& c) { return c.waits_fwd.exposed_ms + c.waits_bwd.exposed_ms; }));
  row.blocked_ms = Spread::of(
      per_rank([](const Cost& c) { return c.waits_fwd.blocked_ms + c.waits_bwd.blocked_ms; }));
  row.fwd_flops = mean_of(per_rank([](const Cost& c) { return c.fwd_flops; }));
  row.bwd_flops = mean_of(per_rank([](const Cost& c) { return c.bwd_flops; }));
  row.calls = int64_t(mean_of(per_rank([](const Cost& c) { return c.calls; })) + 0.5);
  row.flops_per_s =
      row.total_ms.mean > 0 ? (row.fwd_flops + row.bwd_flops) / (row.total_ms.mean * 1e-3) : 0;
  row.params = tree.params[i];
  row.activation_bytes = tree.activations[i];
  // Bar: compute (the scope minus its waits), waits with no collective in
  // flight (grey), exposed communication (red).
  const double wait_fwd = mean_of(per_rank([](const Cost& c) { return c.waits_fwd.total_ms(); }));
  const double wait_bwd = mean_of(per_rank([](const Cost& c) { return c.waits_bwd.total_ms(); }));
  row.bar.forward = std::max(0.0, row.fwd_ms.mean - wait_fwd);
  row.bar.backward = std::max(0.0, row.bwd_ms.mean - wait_bwd);
  row.bar.other = row.blocked_ms.mean;
  row.bar.exposed = row.exposed_ms.mean;
  return row;
}

// Module rows in preorder, as a tree of row indices.
void add_module_rows(LayerBreakdown& b, const Tree& tree,
                     const std::vector<std::vector<Cost>>& costs) {
  std::vector<int> row_of(tree.modules.size(), -1);
  for (size_t i : tree.preorder) {
    LayerRow row = module_row(tree, i, costs);
    const ModuleInfo& m = tree.modules[i];
    auto parent = tree.index.find(m.parent_id);
    if (m.parent_id >= 0 && parent != tree.index.end()) row.parent = row_of[parent->second];
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

LayerBreakdown build_layer_breakdown(const profiler::RunProfile& p,
                                     const profiler::EventSet& events, const LayerOptions& o) {
  LayerBreakdown b;
  b.run_id = p.run.id;
  b.device_times = p.run.backend == "cuda";
  if (!select_step_and_ranks(b, p, o)) return b;
  const std::set<int> rank_set(b.ranks.begin(), b.ranks.end());
  const Tree tree = make_tree(p, b.step);
  std::map<int, RankStepAccount> accounts;
  for (auto& a : account_step(events, b.step))
    if (rank_set.count(a.rank)) accounts[a.rank] = std::move(a);
  // Host scopes and waits measure the host: beside device times they only give the step's time.
  b.has_events = !accounts.empty() && !b.device_times;

  std::optional<double> step_row_ms;
  for (const auto& s : p.steps)
    if (s.step == b.step) step_row_ms = s.step_ms;

  std::vector<std::vector<Cost>> costs;  // [rank][module]
  StepParts parts;
  for (int r : b.ranks) {
    auto acc = accounts.find(r);
    const RankStepAccount* account = acc == accounts.end() ? nullptr : &acc->second;
    costs.push_back(rank_costs(tree, p, b.step, r, b.has_events ? account : nullptr));
    double modules_ms = 0;
    for (size_t root : tree.roots)
      modules_ms += costs.back()[root].fwd_ms + costs.back()[root].bwd_ms;
    const std::optional<double> measured =
        account && account->step_event_ms ? account->step_event_ms : step_row_ms;
    parts.add_rank(modules_ms, b.has_events ? account : nullptr, measured);
  }
  b.step_measured = parts.measured_everywhere;
  b.step_ms = Spread::of(parts.total);

  add_module_rows(b, tree, costs);
  add_step_rows(b, parts);
  const double step_mean = b.step_ms.mean;
  for (LayerRow& row : b.rows) row.share = step_mean > 0 ? row.total_ms.mean / step_mean : 0.0;
  for (const LayerRow& row : b.rows)
    if (row.kind == LayerRowKind::module &&
        (row.host_fwd_ms.mean != row.fwd_ms.mean || row.host_bwd_ms.mean != row.bwd_ms.mean))
      b.host_differs = b.device_times;
  return b;
}

// --- sorting -------------------------------------------------------------------

int natural_compare(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      size_t ie = i, je = j;
      while (ie < a.size() && digit(a[ie])) ++ie;
      while (je < b.size() && digit(b[je])) ++je;
      // Compare the numbers without leading zeros: longer is larger, then digit by digit.
      size_t is = i, js = j;
      while (is + 1 < ie && a[is] == '0') ++is;
      while (js + 1 < je && b[js] == '0') ++js;
      if (ie - is != je - js) return ie - is < je - js ? -1 : 1;
      if (int c = a.substr(is, ie - is).compare(b.substr(js, je - js)); c != 0) return c < 0 ? -1 : 1;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j] ? -1 : 1;
    ++i;
    ++j;
  }
  if (i < a.size()) return 1;
  if (j < b.size()) return -1;
  return 0;
}

namespace {

double numeric_key(const LayerRow& r, LayerColumn c) {
  switch (c) {
    case LayerColumn::fwd: return r.fwd_ms.mean;
    case LayerColumn::bwd: return r.bwd_ms.mean;
    case LayerColumn::host: return r.host_fwd_ms.mean + r.host_bwd_ms.mean;
    case LayerColumn::exposed: return r.exposed_ms.mean;
    case LayerColumn::total: return r.total_ms.mean;
    case LayerColumn::flops: return r.fwd_flops + r.bwd_flops;
    case LayerColumn::flops_per_s: return r.flops_per_s;
    case LayerColumn::share: return r.share;
    case LayerColumn::params: return double(r.params);
    case LayerColumn::activations: return double(r.activation_bytes);
    case LayerColumn::tree:
    case LayerColumn::name: break;
  }
  return 0;
}

}  // namespace

std::vector<int> layer_display_order(const LayerBreakdown& b, LayerColumn column, bool ascending,
                                     const std::function<bool(int)>& expanded) {
  auto sorted = [&](std::vector<int> ids) {
    if (column == LayerColumn::tree) {
      if (!ascending) std::reverse(ids.begin(), ids.end());
      return ids;
    }
    std::stable_sort(ids.begin(), ids.end(), [&](int x, int y) {
      const LayerRow& a = b.rows[size_t(x)];
      const LayerRow& c = b.rows[size_t(y)];
      if (column == LayerColumn::name) {
        const int cmp = natural_compare(a.name, c.name);
        return ascending ? cmp < 0 : cmp > 0;
      }
      const double ka = numeric_key(a, column), kc = numeric_key(c, column);
      return ascending ? ka < kc : ka > kc;
    });
    return ids;
  };
  std::vector<int> out;
  auto visit = [&](auto&& self, int row) -> void {
    out.push_back(row);
    if (expanded && !expanded(row)) return;
    for (int c : sorted(b.rows[size_t(row)].children)) self(self, c);
  };
  for (int r : sorted(b.top_rows)) visit(visit, r);
  return out;
}

}  // namespace hybrid::gui
