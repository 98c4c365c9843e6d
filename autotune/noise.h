// How noisy a trial's measurement is, and when two trials cannot be told apart.
//
// Spread: the step times of the measured window (steps start..end), described
// by base/dispersion.h and stored with the trial (schema v5).
// Noisy: the robust CV (IQR / (1.349 median), the CV of a normal sample with
// that IQR) of those step times exceeds the threshold (--noise-threshold,
// default 0.10). A robust figure, so a stray slow step (under a quarter of the
// window) does not make a steady trial noisy, while a trial whose steps
// alternate between two speeds (preempted every other step) or whose warm-up
// lasts into the window does. The MAD would miss the last two while one mode
// holds the majority.
// Interval: the distribution-free 95 % confidence interval of the median step
// time (order statistics, base::median_rank_interval), mapped into the metric's
// units (a rate is work per step over the step time, so its bounds swap).
// Tie: trials whose metric intervals overlap the best trial's interval are
// within noise of it. Overlapping 95 % intervals is a conservative rule (it
// calls some real differences ties): a tie is not a verdict, it sends the
// tied candidates to a confirmation run (autotune/tie_break.h).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "autotune/metric.h"
#include "profiler/sweep_data.h"

namespace hybrid::autotune {

struct NoiseOptions {
  double threshold = 0.10;  // robust CV above which a trial is noisy
  int remeasure = 2;        // extra measurements of a noisy trial before it is marked noisy
  int confirm_rounds = 3;   // interleaved rounds of a confirmation run; 0: never confirm
  int max_tied = 3;         // candidates a confirmation run takes (the best ones)
  // Confirm the best against the runner-up even when their intervals are apart:
  // intervals see the noise within a trial, not load that changed between trials.
  bool confirm_best = false;
};

profiler::StepSpread spread_of(std::span<const double> step_ms);
double robust_cv(const profiler::StepSpread& s);  // IQR / (1.349 median)
bool is_noisy(const profiler::StepSpread& s, double threshold);
// "median 12.5 ms, IQR 12.1..13.0 ms, robust CV 3.2 %, CV 4.1 %, n 13".
std::string describe_spread(const profiler::StepSpread& s);

struct MetricInterval {
  double lo = 0, hi = 0;  // lo <= hi, in the metric's units
};
// The metric a step of `step_ms` gives the trial (its work per step is fixed).
double metric_at_step(Metric m, const profiler::TrialRow& t, double step_ms);
// The trial's interval in metric units; nullopt without a measured spread.
std::optional<MetricInterval> metric_interval(Metric m, const profiler::TrialRow& t);
bool overlap(const MetricInterval& a, const MetricInterval& b);
// "[12.0, 13.2]" in the metric's precision ("[1.2 GFLOP/s, 1.4 GFLOP/s]" for FLOP/s).
std::string format_interval(Metric m, const MetricInterval& iv);
// "12.5 ms [12.0, 13.2]" or "80.1 samples/s [75.8, 83.3]"; the point alone without a spread.
std::string format_with_interval(Metric m, const profiler::TrialRow& t);

// The best trial and those within noise of it (intervals overlapping the best's),
// best first by the metric, at most max_tied; indices into `trials`. A tie
// when the result has two or more entries. Empty when no ok trial has a metric.
std::vector<size_t> tied_with_best(Metric m, const std::vector<profiler::TrialRow>& trials,
                                   int max_tied);

}  // namespace hybrid::autotune
