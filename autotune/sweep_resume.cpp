// A sweep's resume (autotune/sweep.h): the same command finds its sweep by
// name and identity and runs only what is not finished.
#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "autotune/sweep_run.h"

namespace hybrid::autotune {

using profiler::TrialRow;
using profiler::TrialStatus;

namespace {

bool finished(TrialStatus s) { return s != TrialStatus::running && s != TrialStatus::pending; }

// A trial left `running` when its tuner was killed becomes `pending`, and runs again.
void classify_killed(SweepRun& r, TrialRow& t) {
  t.status = TrialStatus::pending;
  t.reason = "interrupted: hybrid-tune was killed while this trial ran; it runs again";
  r.store.upsert_trial(t);
  r.out << fmt::format("note: trial {} was running when hybrid-tune was killed: now pending\n",
                       t.key);
}

}  // namespace

void open_sweep(SweepRun& r) {
  const auto& s = r.plan.settings;
  const std::string identity = r.plan.identity().dump();
  const std::string base = r.plan.base.dump();
  std::optional<profiler::SweepInfo> found;
  for (const auto& sw : r.store.sweeps())
    if (sw.name == s.name && sw.space_json == identity && sw.base_config_json == base &&
        (!found || sw.id > found->id))
      found = sw;
  if (found) {
    r.sweep = *found;
    for (auto& t : r.store.trials(r.sweep.id)) r.previous[t.key] = t;
    r.store.set_sweep_status(r.sweep.id, profiler::SweepStatus::running);
  } else {
    r.sweep.name = s.name;
    r.sweep.base_config_json = base;
    r.sweep.space_json = identity;
    r.sweep.strategy = s.strategy;
    r.sweep.metric = std::string(metric_column(s.metric));
    r.sweep.id = r.store.create_sweep(r.sweep);
  }
  r.store.add_pruned(r.sweep.id, r.plan.pruned);
}

void restore_history(SweepRun& r) {
  r.done.assign(r.plan.runnable.size(), false);
  std::vector<std::pair<double, Observation>> found;
  size_t rerun = 0;
  for (size_t i = 0; i < r.plan.runnable.size(); ++i) {
    auto it = r.previous.find(r.plan.runnable[i].key);
    if (it == r.previous.end()) continue;
    if (!finished(it->second.status)) {
      if (it->second.status == TrialStatus::running) classify_killed(r, it->second);
      ++rerun;
      continue;
    }
    r.done[i] = true;
    found.emplace_back(it->second.updated_at, observation_of(i, it->second));
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [t, ob] : found) r.history.push_back(ob);
  if (!r.previous.empty())
    r.out << fmt::format(
        "resuming sweep {} '{}': {} trial(s) finished, {} left unfinished to run again\n",
        r.sweep.id, r.plan.settings.name, r.history.size(), rerun);
  for (const auto& [k, t] : r.previous)
    if (t.status == TrialStatus::ok && t.metric &&
        (!r.best || better(r.plan.settings.metric, *t.metric, *r.best->metric)))
      r.best = t;
}

}  // namespace hybrid::autotune
