#include "profiler/report_steps.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <numeric>
#include <string_view>

#include "base/statistics.h"
#include "profiler/report_format.h"

namespace hybrid::profiler {

namespace {

// DeepSpeed's wall-clock timers (wall_clock_breakdown) in its log order; other
// names follow alphabetically.
constexpr std::string_view kTimerOrder[] = {"forward",        "backward",
                                            "backward_inner", "backward_allreduce",
                                            "step",           "optimizer_gradients",
                                            "optimizer_step", "optimizer_allgather"};

size_t timer_rank(const std::string& name) {
  for (size_t i = 0; i < std::size(kTimerOrder); ++i)
    if (kTimerOrder[i] == name) return i;
  return std::size(kTimerOrder);
}

// Per timer: mean, min and max over every (step, rank) of its ms per step, and
// the mean as a share of the mean step time.
std::string timers_table(const RunProfile& p) {
  std::map<std::string, std::vector<double>> by_name;
  for (const auto& t : p.step_timers) by_name[t.name].push_back(t.ms);
  std::vector<std::string> names;
  for (const auto& [name, values] : by_name) names.push_back(name);
  std::stable_sort(names.begin(), names.end(),
                   [](const auto& a, const auto& b) { return timer_rank(a) < timer_rank(b); });
  double step_ms = 0;
  for (const auto& s : p.steps) step_ms += s.step_ms / double(p.steps.size());
  report::TextTable table({"timer", "mean", "min", "max", "of the step"});
  for (const auto& name : names) {
    const auto& v = by_name[name];
    const double mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
    table.add_row({name, report::format_ms(mean),
                   report::format_ms(*std::min_element(v.begin(), v.end())),
                   report::format_ms(*std::max_element(v.begin(), v.end())),
                   step_ms > 0 ? report::format_percent(mean / step_ms) : std::string("-")});
  }
  return report::section("wall-clock breakdown (ms per step, over steps and ranks)") +
         table.render("  ");
}

// Pipeline runs: each step's bubble, the mean over its ranks (none without
// pipeline stages: every row 0).
std::map<int64_t, double> bubble_per_step(const RunProfile& p) {
  std::map<int64_t, std::pair<double, int>> sums;
  bool any = false;
  for (const auto& r : p.step_ranks) {
    auto& [sum, n] = sums[r.step];
    sum += r.bubble_ms;
    ++n;
    any = any || r.bubble_ms > 0;
  }
  std::map<int64_t, double> mean;
  if (any)
    for (const auto& [step, sn] : sums) mean[step] = sn.first / sn.second;
  return mean;
}

}  // namespace

std::string steps_report(const RunProfile& p) {
  std::string out = report::section("hybrid steps");
  out += fmt::format("run {} {} · status {} · {} steps\n", p.run.id, p.run.name,
                     to_string(p.run.status), p.steps.size());
  if (p.steps.empty()) return out + "no steps recorded\n";
  const auto bubbles = bubble_per_step(p);
  std::vector<std::string> columns = {"step",      "loss", "lr",       "loss scale", "skipped",
                                      "grad norm", "time", "tokens/s", "FLOP/s"};
  if (!bubbles.empty()) columns.push_back("bubble (rank mean)");
  report::TextTable table(columns, 0);
  std::vector<double> ms, bubble_shares;
  double tokens = 0, flops = 0;
  int skipped = 0;
  for (const auto& s : p.steps) {
    std::vector<std::string> row = {std::to_string(s.step),
                                    fmt::format("{:.4f}", s.loss),
                                    fmt::format("{:.3e}", s.lr),
                                    fmt::format("{:g}", s.loss_scale),
                                    s.skipped ? "yes" : "no",
                                    fmt::format("{:.3f}", s.grad_norm),
                                    report::format_ms(s.step_ms),
                                    report::format_count(s.tokens_per_s),
                                    report::format_flop_rate(s.flops_per_s)};
    if (const auto b = bubbles.find(s.step); b != bubbles.end() && s.step_ms > 0) {
      row.push_back(fmt::format("{} ({})", report::format_ms(b->second),
                                report::format_percent(b->second / s.step_ms)));
      bubble_shares.push_back(b->second / s.step_ms);
    } else if (!bubbles.empty()) {
      row.push_back("-");
    }
    table.add_row(row);
    ms.push_back(s.step_ms);
    tokens += s.tokens_per_s;
    flops += s.flops_per_s;
    skipped += s.skipped ? 1 : 0;
  }
  out += table.render("  ");
  const size_t n = ms.size();
  const double median = base::median(ms);
  out +=
      fmt::format("median step {}, mean {} tokens/s, mean {}, {} skipped{}\n",
                  report::format_ms(median), report::format_count(tokens / double(n)),
                  report::format_flop_rate(flops / double(n)), skipped,
                  bubble_shares.empty()
                      ? std::string()
                      : ", median pipeline bubble " +
                            report::format_percent(base::median(bubble_shares)) + " of the step");
  if (!p.step_timers.empty()) out += timers_table(p);
  return out;
}

}  // namespace hybrid::profiler
