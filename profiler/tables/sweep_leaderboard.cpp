#include "profiler/tables/sweep_leaderboard.h"

#include <algorithm>
#include <cmath>

namespace hybrid::profiler {

int SweepLeaderboard::count(TrialStatus s) const {
  return int(std::count_if(rows.begin(), rows.end(),
                           [s](const LeaderboardRow& r) { return r.trial.status == s; }));
}

std::optional<MetricRange> trial_metric_interval(const MetricInfo& metric, const TrialRow& t) {
  if (!t.spread || t.spread->count == 0 || !t.metric || !t.latency_ms || !(*t.latency_ms > 0))
    return std::nullopt;
  const auto at = [&](double step_ms) {
    if (metric.unit == "ms") return step_ms;
    return step_ms > 0 ? *t.metric * *t.latency_ms / step_ms : 0.0;
  };
  const double a = at(t.spread->ci_low_ms), b = at(t.spread->ci_high_ms);
  return MetricRange{std::min(a, b), std::max(a, b)};
}

std::vector<int> rank_trials(const MetricInfo& metric, const std::vector<TrialRow>& trials) {
  std::vector<int> order;
  for (size_t i = 0; i < trials.size(); ++i)
    if (trials[i].status == TrialStatus::ok && trials[i].metric && !std::isnan(*trials[i].metric))
      order.push_back(int(i));
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return metric.better(*trials[size_t(a)].metric, *trials[size_t(b)].metric);
  });
  return order;
}

SweepLeaderboard build_sweep_leaderboard(const SweepInfo& sweep,
                                         const std::vector<TrialRow>& trials,
                                         const std::vector<PrunedCandidate>& pruned) {
  SweepLeaderboard t;
  t.sweep = sweep;
  t.metric = metric_info(sweep.metric);
  for (const TrialRow& trial : trials)
    t.rows.push_back(
        {trial, parse_trial_config(trial.config_json), trial_metric_interval(t.metric, trial)});
  t.ranking = rank_trials(t.metric, trials);
  if (!t.ranking.empty()) t.best = t.ranking.front();
  t.pruned = pruned;
  for (const PrunedCandidate& p : pruned)
    t.pruned_config.push_back(parse_trial_config(p.config_json));
  return t;
}

}  // namespace hybrid::profiler
