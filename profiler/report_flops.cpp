#include "profiler/report_flops.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "profiler/report_format.h"
#include "profiler/spread.h"
#include "profiler/tables/module_rollup.h"

namespace hybrid::profiler {

namespace {

using report::format_count;
using report::format_flop;
using report::format_flop_rate;
using report::format_ms;
using report::format_percent;

std::string ms_spread(const Spread& s) {
  return fmt::format("{} [{}, {}]", format_ms(s.mean), format_ms(s.min), format_ms(s.max));
}

double rate(double flops, double ns) { return ns > 0 ? flops / (ns * 1e-9) : 0.0; }

double mean_of(const std::vector<double>& v) { return Spread::of(v).mean; }

constexpr auto kFwdNs = [](const ModuleCost& c) { return c.fwd_ns; };
constexpr auto kBwdNs = [](const ModuleCost& c) { return c.bwd_ns; };
constexpr auto kFwdFlops = [](const ModuleCost& c) { return c.fwd_flops; };
constexpr auto kBwdFlops = [](const ModuleCost& c) { return c.bwd_flops; };
constexpr auto kFwdMacs = [](const ModuleCost& c) { return c.fwd_macs; };
constexpr auto kBwdMacs = [](const ModuleCost& c) { return c.bwd_macs; };
constexpr auto kRcNs = [](const ModuleCost& c) { return c.recompute_ns; };
constexpr auto kRcFlops = [](const ModuleCost& c) { return c.recompute_flops; };

std::vector<double> to_ms(std::vector<double> ns) {
  for (double& x : ns) x *= 1e-6;
  return ns;
}

std::string rate_spread(const std::vector<double>& v) {
  const Spread s = Spread::of(v);
  return fmt::format("{} [{}, {}]", format_flop_rate(s.mean), format_flop_rate(s.min),
                     format_flop_rate(s.max));
}

// One "label:   value" line of a summary.
void add_row(std::string& out, std::string_view label, const std::string& value) {
  out += fmt::format("{:<44}{}\n", std::string(label) + ":", value);
}

// "3 of 4 (missing: 2)".
std::string ranks_line(const ModuleRollup& t, int world_size) {
  std::string line = fmt::format("{} of {}", t.ranks.size(), world_size);
  if (int(t.ranks.size()) < world_size) {
    std::string missing;
    for (int r = 0; r < world_size; ++r)
      if (!std::binary_search(t.ranks.begin(), t.ranks.end(), r))
        missing += fmt::format("{}{}", missing.empty() ? "" : ",", r);
    line += " (missing: " + missing + ")";
  }
  return line;
}

// The model's forward and backward per rank: latencies and FLOP rates.
struct PerRank {
  std::vector<double> fwd_ms, bwd_ms, both_ms, fwd_rate, bwd_rate, both_rate;
  double flops_all_ranks = 0;  // the step's, summed over the ranks
};

PerRank per_rank(const ModuleRollup& t) {
  PerRank r;
  r.fwd_ms = to_ms(t.model_per_rank(kFwdNs));
  r.bwd_ms = to_ms(t.model_per_rank(kBwdNs));
  r.both_ms.resize(r.fwd_ms.size());
  for (size_t i = 0; i < r.both_ms.size(); ++i) r.both_ms[i] = r.fwd_ms[i] + r.bwd_ms[i];
  const auto fwd_f = t.model_per_rank(kFwdFlops), bwd_f = t.model_per_rank(kBwdFlops);
  for (size_t i = 0; i < r.fwd_ms.size(); ++i) {
    r.fwd_rate.push_back(rate(fwd_f[i], r.fwd_ms[i] * 1e6));
    r.bwd_rate.push_back(rate(bwd_f[i], r.bwd_ms[i] * 1e6));
    r.both_rate.push_back(rate(fwd_f[i] + bwd_f[i], r.both_ms[i] * 1e6));
    r.flops_all_ranks += fwd_f[i] + bwd_f[i];
  }
  return r;
}

std::string summary(const RunProfile& p, const ModuleRollup& t, int64_t step) {
  const RunInfo& run = p.run;
  double params = double(run.n_params);
  if (params == 0)
    for (size_t r : t.tree.roots) params += double(t.tree.params[r]);
  const PerRank pr = per_rank(t);
  const double fwd_flops = mean_of(t.model_per_rank(kFwdFlops));
  const double bwd_flops = mean_of(t.model_per_rank(kBwdFlops));
  const StepRow* step_row = nullptr;
  for (const auto& s : p.steps)
    if (s.step == step) step_row = &s;
  std::string out;
  auto row = [&](std::string_view label, const std::string& value) { add_row(out, label, value); };
  row("run", fmt::format("{} {}", run.id, run.name));
  row("profiled step", std::to_string(step));
  row("world size", std::to_string(run.world_size));
  row("ranks in profile", ranks_line(t, run.world_size));
  row("micro batch size per rank", std::to_string(run.micro_batch));
  row("gradient accumulation steps", std::to_string(run.grad_accum));
  row("sequence length", std::to_string(run.seq_len));
  row("dtype / ZeRO stage", fmt::format("{} / {}", run.dtype, run.zero_stage));
  row("params", format_count(params));
  row("fwd latency per rank (mean [min, max])", ms_spread(Spread::of(pr.fwd_ms)));
  row("bwd latency per rank (mean [min, max])", ms_spread(Spread::of(pr.bwd_ms)));
  row("fwd+bwd latency per rank (mean [min, max])", ms_spread(Spread::of(pr.both_ms)));
  row("step latency", step_row ? format_ms(step_row->step_ms) : std::string("-"));
  row("fwd FLOPs per rank", format_flop(fwd_flops));
  row("bwd FLOPs per rank", format_flop(bwd_flops));
  row("bwd / fwd FLOPs", fwd_flops > 0 ? fmt::format("{:.2f}", bwd_flops / fwd_flops) : "-");
  row("FLOPs per step (all ranks)", format_flop(pr.flops_all_ranks));
  row("fwd FLOP/s per rank (mean [min, max])", rate_spread(pr.fwd_rate));
  row("bwd FLOP/s per rank (mean [min, max])", rate_spread(pr.bwd_rate));
  row("fwd+bwd FLOP/s per rank (mean [min, max])", rate_spread(pr.both_rate));
  row("achieved FLOP/s of the step (all ranks)",
      step_row ? format_flop_rate(step_row->flops_per_s) : std::string("-"));
  return out;
}

bool recomputed(const ModuleRollup& t) {
  return mean_of(t.model_per_rank(kRcNs)) > 0 || mean_of(t.model_per_rank(kRcFlops)) > 0;
}

// Activation checkpointing: the forwards run again in backward, apart from bwd.
std::string recompute_summary(const ModuleRollup& t) {
  const auto rc_ms = to_ms(t.model_per_rank(kRcNs));
  const double rc_flops = mean_of(t.model_per_rank(kRcFlops));
  const double fwd_flops = mean_of(t.model_per_rank(kFwdFlops));
  std::string out;
  auto row = [&](std::string_view label, const std::string& value) { add_row(out, label, value); };
  row("recompute latency per rank (mean [min, max])", ms_spread(Spread::of(rc_ms)));
  row("recompute FLOPs per rank", format_flop(rc_flops));
  row("recompute / fwd FLOPs", fwd_flops > 0 ? fmt::format("{:.2f}", rc_flops / fwd_flops) : "-");
  return out;
}

std::string aggregated(const ModuleRollup& t, const FlopsReportOptions& o) {
  int max_depth = 0;
  for (const auto& m : t.tree.modules) max_depth = std::max(max_depth, m.depth);
  if (o.module_depth >= 0) max_depth = std::min(max_depth, o.module_depth);
  const double total_ns = mean_of(t.model_per_rank(kFwdNs)) + mean_of(t.model_per_rank(kBwdNs));
  std::string out = fmt::format(
      "Top {} module type(s) per depth by fwd+bwd latency (rank mean; sums over "
      "modules of the type):\n",
      o.top_modules);
  for (int d = 0; d <= max_depth; ++d) {
    struct Group {
      int modules = 0;
      double params = 0, fwd_macs = 0, fwd_ns = 0, bwd_ns = 0;
    };
    std::map<std::string, Group> groups;
    for (size_t i = 0; i < t.tree.modules.size(); ++i) {
      if (t.tree.modules[i].depth != d) continue;
      Group& g = groups[t.tree.modules[i].type];
      ++g.modules;
      g.params += double(t.tree.params[i]);
      g.fwd_macs += mean_of(t.per_rank(i, kFwdMacs));
      g.fwd_ns += mean_of(t.per_rank(i, kFwdNs));
      g.bwd_ns += mean_of(t.per_rank(i, kBwdNs));
    }
    std::vector<std::pair<std::string, Group>> sorted(groups.begin(), groups.end());
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
      return a.second.fwd_ns + a.second.bwd_ns > b.second.fwd_ns + b.second.bwd_ns;
    });
    if (int(sorted.size()) > o.top_modules) sorted.resize(size_t(std::max(0, o.top_modules)));
    report::TextTable table({fmt::format("depth {}", d), "modules", "params", "fwd MACs",
                             "fwd latency", "bwd latency", "share of fwd+bwd"});
    for (const auto& [type, g] : sorted)
      table.add_row({type, std::to_string(g.modules), format_count(g.params),
                     format_count(g.fwd_macs), format_ms(g.fwd_ns * 1e-6),
                     format_ms(g.bwd_ns * 1e-6),
                     format_percent(total_ns > 0 ? (g.fwd_ns + g.bwd_ns) / total_ns : 0)});
    out += table.render("  ");
  }
  return out;
}

enum class Phase { forward, backward, recompute };

std::string module_table(const ModuleRollup& t, const FlopsReportOptions& o, Phase phase) {
  const bool forward = phase == Phase::forward, re = phase == Phase::recompute;
  const auto ns_of = forward ? +kFwdNs : re ? +kRcNs : +kBwdNs;
  const auto flops_of = forward ? +kFwdFlops : re ? +kRcFlops : +kBwdFlops;
  const auto macs_of = forward ? +kFwdMacs : +kBwdMacs;  // not counted for recomputation
  const double total_ns = mean_of(t.model_per_rank(ns_of));
  double total_params = 0;
  for (size_t r : t.tree.roots) total_params += double(t.tree.params[r]);
  report::TextTable table(
      {"module", "type", "params", "MACs", "FLOPs", "latency [min, max]", "FLOP/s", "share"}, 2);
  auto visit = [&](auto&& self, size_t i) -> void {
    const ModuleInfo& m = t.tree.modules[i];
    if (o.module_depth >= 0 && m.depth > o.module_depth) return;
    const double flops = mean_of(t.per_rank(i, flops_of));
    const Spread ms = Spread::of(to_ms(t.per_rank(i, ns_of)));
    table.add_row({std::string(size_t(2 * m.depth), ' ') + m.name, m.type,
                   fmt::format("{} ({})", format_count(double(t.tree.params[i])),
                               format_percent(
                                   total_params > 0 ? double(t.tree.params[i]) / total_params : 0)),
                   re ? std::string("-") : format_count(mean_of(t.per_rank(i, macs_of))),
                   format_flop(flops), ms_spread(ms), format_flop_rate(rate(flops, ms.mean * 1e6)),
                   format_percent(total_ns > 0 ? ms.mean * 1e6 / total_ns : 0)});
    for (size_t c : t.tree.children[i]) self(self, c);
  };
  for (size_t r : t.tree.roots) visit(visit, r);
  return table.render("  ");
}

}  // namespace

std::string flops_report(const RunProfile& p, const FlopsReportOptions& o) {
  std::set<int64_t> steps;
  for (const auto& l : p.layers) steps.insert(l.step);
  std::string out = report::section("hybrid flops profiler");
  if (steps.empty()) {
    out += fmt::format("run {} has no layer profile (enable flops_profiler in the config)\n",
                       p.run.id);
    return out;
  }
  const int64_t step = o.step.value_or(*steps.rbegin());
  if (!steps.count(step)) {
    std::string have;
    for (int64_t s : steps) have += fmt::format("{}{}", have.empty() ? "" : ", ", s);
    throw std::invalid_argument(
        fmt::format("flops report: run {} has no layer profile for step {} (profiled steps: {})",
                    p.run.id, step, have));
  }
  const ModuleRollup tree = rollup_modules(p, step);
  out += summary(p, tree, step);
  if (recomputed(tree)) out += recompute_summary(tree);
  out += '\n';
  out += report::section("aggregated profile per depth");
  out += aggregated(tree, o);
  if (!o.detailed) return out;
  out += '\n';
  out += report::section("forward, per module (rank mean; latency [min, max] over ranks)");
  out += "share = part of the model's forward latency; values include child modules\n";
  out += module_table(tree, o, Phase::forward);
  out += '\n';
  out += report::section("backward, per module (rank mean; latency [min, max] over ranks)");
  out += "share = part of the model's backward latency; values include child modules\n";
  out += module_table(tree, o, Phase::backward);
  if (recomputed(tree)) {
    out += '\n';
    out += report::section(
        "recompute (activation checkpointing), per module (rank mean; latency [min, max] over "
        "ranks)");
    out +=
        "forwards run again in backward, not part of the backward above; share = part of the "
        "model's recompute latency\n";
    out += module_table(tree, o, Phase::recompute);
  }
  return out;
}

}  // namespace hybrid::profiler
