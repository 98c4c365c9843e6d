#include "profiler/tables/sweep_leaderboard.h"

#include <algorithm>
#include <cmath>

namespace hybrid::profiler {

int SweepLeaderboard::count(TrialStatus s) const {
  return int(std::count_if(rows.begin(), rows.end(),
                           [s](const LeaderboardRow& r) { return r.trial.status == s; }));
}

SweepLeaderboard build_sweep_leaderboard(const SweepInfo& sweep,
                                         const std::vector<TrialRow>& trials,
                                         const std::vector<PrunedCandidate>& pruned) {
  SweepLeaderboard t;
  t.sweep = sweep;
  t.metric = metric_info(sweep.metric);
  for (const TrialRow& trial : trials)
    t.rows.push_back({trial, parse_trial_config(trial.config_json)});
  for (size_t i = 0; i < t.rows.size(); ++i)
    if (t.rows[i].trial.status == TrialStatus::ok && t.rows[i].trial.metric &&
        !std::isnan(*t.rows[i].trial.metric))
      t.ranking.push_back(int(i));
  std::stable_sort(t.ranking.begin(), t.ranking.end(), [&](int a, int b) {
    return t.metric.better(*t.rows[size_t(a)].trial.metric, *t.rows[size_t(b)].trial.metric);
  });
  if (!t.ranking.empty()) t.best = t.ranking.front();
  t.pruned = pruned;
  for (const PrunedCandidate& p : pruned)
    t.pruned_config.push_back(parse_trial_config(p.config_json));
  return t;
}

}  // namespace hybrid::profiler
