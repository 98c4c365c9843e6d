#include "autotune/noise.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/dispersion.h"
#include "base/units.h"
#include "profiler/tables/sweep_leaderboard.h"

namespace hybrid::autotune {

using profiler::StepSpread;
using profiler::TrialRow;

StepSpread spread_of(std::span<const double> step_ms) {
  const base::Dispersion d = base::describe_dispersion(step_ms);
  StepSpread s;
  s.count = int64_t(d.count);
  s.median_ms = d.median;
  s.q1_ms = d.q1;
  s.q3_ms = d.q3;
  s.mad_ms = d.mad;
  s.cv = d.cv;
  s.ci_low_ms = d.ci_low;
  s.ci_high_ms = d.ci_high;
  return s;
}

double robust_cv(const StepSpread& s) {
  return s.median_ms > 0 ? (s.q3_ms - s.q1_ms) / (1.349 * s.median_ms) : 0.0;
}

bool is_noisy(const StepSpread& s, double threshold) { return robust_cv(s) > threshold; }

std::string describe_spread(const StepSpread& s) {
  return fmt::format(
      "median {:.2f} ms, IQR {:.2f}..{:.2f} ms, robust CV {:.1f} %, CV {:.1f} %, n {}", s.median_ms,
      s.q1_ms, s.q3_ms, 100 * robust_cv(s), 100 * s.cv, s.count);
}

double metric_at_step(Metric m, const TrialRow& t, double step_ms) {
  if (m == Metric::latency) return step_ms;
  // Rates are work per step over the step time: the measured point fixes the work.
  return t.metric && t.latency_ms && step_ms > 0 ? *t.metric * *t.latency_ms / step_ms : 0.0;
}

std::optional<MetricInterval> metric_interval(Metric m, const TrialRow& t) {
  // One mapping for the tuner and the viewer (profiler/tables/sweep_leaderboard.h).
  const auto r = profiler::trial_metric_interval(metric_info(m), t);
  if (!r) return std::nullopt;
  return MetricInterval{r->lo, r->hi};
}

bool overlap(const MetricInterval& a, const MetricInterval& b) {
  return a.lo <= b.hi && b.lo <= a.hi;
}

std::string format_interval(Metric m, const MetricInterval& iv) {
  switch (m) {
    case Metric::flops:
      return fmt::format("[{}, {}]", base::format_flop_rate(iv.lo), base::format_flop_rate(iv.hi));
    case Metric::tokens:
      return fmt::format("[{:.0f}, {:.0f}]", iv.lo, iv.hi);
    default:
      return fmt::format("[{:.1f}, {:.1f}]", iv.lo, iv.hi);
  }
}

std::string format_with_interval(Metric m, const TrialRow& t) {
  if (!t.metric) return "-";
  const auto iv = metric_interval(m, t);
  if (!iv) return format_metric(m, *t.metric);
  return format_metric(m, *t.metric) + " " + format_interval(m, *iv);
}

std::vector<size_t> tied_with_best(Metric m, const std::vector<TrialRow>& trials, int max_tied) {
  const std::vector<int> order = profiler::rank_trials(metric_info(m), trials);
  std::vector<size_t> tied;
  if (order.empty()) return tied;
  const TrialRow& best = trials[size_t(order.front())];
  tied.push_back(size_t(order.front()));
  const auto best_iv = metric_interval(m, best);
  if (!best_iv) return tied;
  for (size_t i = 1; i < order.size() && tied.size() < size_t(std::max(1, max_tied)); ++i) {
    const auto iv = metric_interval(m, trials[size_t(order[i])]);
    if (iv && overlap(*best_iv, *iv)) tied.push_back(size_t(order[i]));
  }
  return tied;
}

}  // namespace hybrid::autotune
