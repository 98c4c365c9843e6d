// What the steps of one sweep invocation (autotune/sweep.cpp) share, and its
// resume (autotune/sweep_resume.cpp): inside hybrid_autotune only.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "autotune/cluster_rates.h"
#include "autotune/cost_model.h"
#include "autotune/strategy.h"
#include "autotune/sweep_plan.h"
#include "profiler/store/run_store.h"

namespace hybrid::autotune {

// What the steps of one sweep invocation share.
struct SweepRun {
  SweepRun(const SweepPlan& p, profiler::RunStore& st, std::ostream& o, const std::atomic<bool>* c)
      : plan(p), store(st), out(o), cancel(c) {}
  const SweepPlan& plan;
  profiler::RunStore& store;
  std::ostream& out;
  const std::atomic<bool>* cancel;
  profiler::SweepInfo sweep;
  std::map<std::string, profiler::TrialRow>
      previous;  // this sweep's trials from earlier invocations, by key
  ClusterRates rates;
  std::vector<StepFeatures> features;  // per runnable candidate
  std::unique_ptr<Strategy> strategy;
  std::vector<Observation> history;  // finished trials in the order they finished
  std::vector<bool> done;            // per runnable candidate
  std::optional<profiler::TrialRow> best;
  size_t planned = 0;  // trials this sweep may run in all
  std::chrono::steady_clock::time_point t_start = std::chrono::steady_clock::now();
  double wall_sum = 0;  // of the trials run now, for the ETA
};

// A stored trial as the strategy sees it.
inline Observation observation_of(size_t index, const profiler::TrialRow& row) {
  return {index, row.status == profiler::TrialStatus::ok && row.metric.has_value(),
          row.metric.value_or(0.0), row.latency_ms.value_or(0.0) / 1e3};
}

// The sweep this command already started (same name, space and base config), or
// a new one; its pruned candidates recorded.
void open_sweep(SweepRun& r);

// What earlier invocations finished becomes history (and the best so far);
// unfinished trials run again, a trial a killed tuner left `running` marked
// `pending`.
void restore_history(SweepRun& r);

}  // namespace hybrid::autotune
