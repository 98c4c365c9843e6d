// One trial: the candidate's config written into its own directory, hybrid-train
// started through the launcher template for `steps` steps (the autotuning
// block's end_profile_step) with a result file and the run store, the process
// group killed at the timeout, and the outcome classified from the exit status
// and the result JSON (autotune/outcome.h). The metric is the median (or, with
// --statistic min, the minimum) step time of steps
// start_profile_step..end_profile_step: per-step times come from the run
// store's steps of the trial's run (run_id in the result), falling back to
// hybrid-train's median over all steps when the run was not stored.
//
// The config file is the candidate's, except that a 1-bit optimizer's freeze
// step is moved before the measured window (measured_config,
// autotune/optimizer_axis.h): the trial times the compressed phase.
//
// Files in the trial directory: config.json, result.json, output.log, and the
// Slurm job's output where an sbatch template writes it (autotune/scheduler_job.h).
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "autotune/candidate.h"
#include "autotune/noise.h"
#include "autotune/outcome.h"
#include "profiler/store/run_store.h"

namespace hybrid::autotune {

struct TrialSpec {
  std::string train_bin = "hybrid-train";
  std::string launcher_template;  // "" → default_launcher_template(nprocs)
  int nprocs = 1;
  int steps = 5;
  int start_profile_step = 3;
  StepStatistic statistic = StepStatistic::median;
  double timeout_s = 600;
  std::string db;        // run store the trial records its run in ("" none)
  std::string run_name;  // name of that run
  std::string dir;       // the trial's directory (created)
  // Told live what the scheduler does with the trial's job ("trial KEY: pending in
  // the scheduler's queue (Slurm job 12)"); called from another thread.
  std::function<void(const std::string&)> notice;
};

struct TrialRun {
  TrialOutcome outcome;
  double wall_s = 0;
  std::string output_tail;
  std::vector<std::string> argv;
  bool cancelled = false;  // the tuner was interrupted; the outcome means nothing
};

// store (optional) is read for the run's per-step times.
TrialRun run_trial(const Candidate& c, const TrialSpec& spec, profiler::RunStore* store,
                   const std::atomic<bool>* cancel = nullptr);

// A trial measured until steady: run_trial, then again while its window's step
// times are noisy (autotune/noise.h), at most noise.remeasure more times. The
// steadiest ok attempt (lowest robust CV) is kept; `noisy` when even it is over
// the threshold. A failed attempt ends the retries (its outcome is the trial's).
struct SteadyTrial {
  TrialRun run;
  std::optional<profiler::StepSpread> spread;  // of the kept measurement's window
  int attempts = 1;
  bool noisy = false;
};
SteadyTrial run_trial_steady(const Candidate& c, const TrialSpec& spec, profiler::RunStore* store,
                             const NoiseOptions& noise, const std::atomic<bool>* cancel = nullptr);

// hybrid-train beside the running executable (same directory, or the build
// tree's engine/ next to autotune/), else "hybrid-train" from PATH.
std::string find_train_binary(const std::string& self_exe);
// The engine tool `name` (hybrid-generate, ...) found the same way.
std::string find_tool_binary(const std::string& self_exe, const std::string& name);
std::string self_executable();  // /proc/self/exe

}  // namespace hybrid::autotune
