#include "autotune/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "autotune/noise.h"
#include "base/units.h"
#include "profiler/tables/sweep_leaderboard.h"

namespace hybrid::autotune {

using profiler::TrialRow;
using profiler::TrialStatus;

namespace {

std::string fit(const std::string& s, size_t width) {
  return s.size() <= width ? s : s.substr(0, width - 3) + "...";
}

std::string opt_bytes(const std::optional<uint64_t>& b) { return b ? base::format_bytes(*b) : "-"; }

}  // namespace

std::string progress_line(Metric m, const ProgressInfo& p) {
  const TrialRow& t = *p.trial;
  std::string what;
  if (t.status == TrialStatus::ok && t.metric) {
    what = fmt::format("ok {}", format_metric(m, *t.metric));
    if (t.predicted_step_ms && t.latency_ms)
      what +=
          fmt::format(" ({:.1f} ms/step, predicted {:.1f})", *t.latency_ms, *t.predicted_step_ms);
  } else {
    what = fmt::format("{}: {}", profiler::to_string(t.status), fit(t.reason, 70));
    // The last line the trial printed often says what the reason cannot (a launcher's complaint).
    std::string tail = t.output_tail;
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
    const size_t nl = tail.rfind('\n');
    if (!tail.empty())
      what += fmt::format(" (last output: {})",
                          fit(nl == std::string::npos ? tail : tail.substr(nl + 1), 80));
  }
  std::string best = "none yet";
  if (p.best && p.best->metric)
    best = fmt::format("{} [{}]", format_metric(m, *p.best->metric), p.best->key);
  const std::string eta = p.eta_s < 0 ? "?" : base::format_duration(p.eta_s);
  return fmt::format("[{:>3}/{}] {} | {} | {} | best {} | ETA {}", p.done, p.planned, t.key, what,
                     base::format_duration(t.wall_s.value_or(0.0)), best, eta);
}

std::vector<TrialRow> ranked(Metric m, std::vector<TrialRow> trials) {
  std::vector<TrialRow> out;
  std::vector<bool> placed(trials.size(), false);
  for (const int i : profiler::rank_trials(metric_info(m), trials)) {
    out.push_back(std::move(trials[size_t(i)]));
    placed[size_t(i)] = true;
  }
  for (size_t i = 0; i < trials.size(); ++i)
    if (!placed[i]) out.push_back(std::move(trials[i]));
  return out;
}

std::optional<TrialRow> best_trial(Metric m, const std::vector<TrialRow>& trials) {
  const std::vector<int> order = profiler::rank_trials(metric_info(m), trials);
  if (order.empty()) return std::nullopt;
  return trials[size_t(order.front())];
}

std::string leaderboard(Metric m, const std::vector<TrialRow>& trials, size_t max_rows) {
  const auto rows = ranked(m, trials);
  // The interval is the 95 % confidence interval of the median step time in the
  // metric's units (autotune/noise.h); "~" marks a trial still noisy after its
  // re-measurements, "xN" one measured N times.
  std::string s = fmt::format(
      "{:>3}  {:<34} {:<12} {:>18} {:>20} {:>7} {:>10} {:>11} {:>11} {:>13} {:>11} {:>11} {:>8} "
      "{:>8}\n",
      "#", "trial", "status", std::string(metric_name(m)), "95 % interval", "noise", "ms/step",
      "samples/s", "tokens/s", "model FLOP/s", "peak mem", "pred. mem", "mem err", "wall");
  size_t n = 0;
  for (const auto& t : rows) {
    if (++n > max_rows) {
      s += fmt::format("  ... {} more\n", rows.size() - max_rows);
      break;
    }
    std::string err = "-";
    if (t.peak_mem_bytes && t.predicted_mem_bytes && *t.peak_mem_bytes > 0)
      err = fmt::format("{:+.1f} %",
                        100.0 * (double(*t.predicted_mem_bytes) - double(*t.peak_mem_bytes)) /
                            double(*t.peak_mem_bytes));
    const bool ok = t.status == TrialStatus::ok;
    const auto iv = ok ? metric_interval(m, t) : std::nullopt;
    std::string noise = "-";
    if (ok && t.spread)
      noise = fmt::format("{}{:.0f}%{}", t.noisy ? "~" : "", 100 * robust_cv(*t.spread),
                          t.attempts > 1 ? fmt::format("x{}", t.attempts) : "");
    s += fmt::format(
        "{:>3}  {:<34} {:<12} {:>18} {:>20} {:>7} {:>10} {:>11} {:>11} {:>13} {:>11} {:>11} {:>8} "
        "{:>8}\n",
        ok ? std::to_string(n) : "-", fit(t.key, 34), std::string(profiler::to_string(t.status)),
        ok && t.metric ? format_metric(m, *t.metric) : "-", iv ? format_interval(m, *iv) : "-",
        noise, t.latency_ms ? fmt::format("{:.1f}", *t.latency_ms) : "-",
        t.samples_per_s ? fmt::format("{:.1f}", *t.samples_per_s) : "-",
        t.tokens_per_s ? fmt::format("{:.0f}", *t.tokens_per_s) : "-",
        t.flops_per_s ? base::format_flop_rate(*t.flops_per_s) : "-", opt_bytes(t.peak_mem_bytes),
        opt_bytes(t.predicted_mem_bytes), err, t.wall_s ? base::format_duration(*t.wall_s) : "-");
    if (!ok && !t.reason.empty()) s += fmt::format("     {}\n", fit(t.reason, 150));
  }
  return s;
}

std::string pruned_table(const std::vector<profiler::PrunedCandidate>& pruned) {
  std::string s;
  for (const auto& p : pruned) s += fmt::format("  {}: {}\n", p.key, p.reason);
  return s;
}

MemoryCheck memory_check(const std::vector<TrialRow>& trials) {
  MemoryCheck c;
  double sum = 0;
  for (const auto& t : trials) {
    if (t.status != TrialStatus::ok || !t.peak_mem_bytes || !t.predicted_mem_bytes ||
        *t.peak_mem_bytes == 0)
      continue;
    const double e =
        (double(*t.predicted_mem_bytes) - double(*t.peak_mem_bytes)) / double(*t.peak_mem_bytes);
    sum += std::fabs(e);
    if (c.trials == 0 || std::fabs(e) > std::fabs(c.worst_error))
      c.worst_error = e, c.worst_key = t.key;
    ++c.trials;
  }
  c.mean_abs_error = c.trials ? sum / double(c.trials) : 0.0;
  return c;
}

std::string format_memory_check(const MemoryCheck& c) {
  if (c.trials == 0) return "memory model vs measured peak: no ok trial to compare";
  return fmt::format(
      "memory model vs measured peak (per rank, {} ok trials): mean |error| {:.1f} %, worst "
      "{:+.1f} % [{}]",
      c.trials, c.mean_abs_error * 100, c.worst_error * 100, c.worst_key);
}

}  // namespace hybrid::autotune
