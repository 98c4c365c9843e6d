#include "autotune/trial_runner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "autotune/launcher.h"
#include "autotune/optimizer_axis.h"
#include "autotune/process.h"
#include "autotune/scheduler_job.h"
#include "base/atomic_file.h"
#include "base/subprocess.h"

namespace hybrid::autotune {

namespace fs = std::filesystem;

std::string self_executable() {
  std::error_code ec;
  const auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("hybrid-tune") : p.string();
}

std::string find_tool_binary(const std::string& self_exe, const std::string& name) {
  const fs::path dir = fs::path(self_exe).parent_path();
  for (const fs::path& p : {dir / name, dir / ".." / "engine" / name})
    if (::access(p.c_str(), X_OK) == 0) return fs::weakly_canonical(p).string();
  return name;
}

std::string find_train_binary(const std::string& self_exe) {
  return find_tool_binary(self_exe, "hybrid-train");
}

namespace {

// The trial's files: its config written, an earlier attempt's result, log and
// job outputs removed (a resumed sweep must not read them as this one's).
struct TrialFiles {
  std::string cfg, result, log;
};

TrialFiles prepare_trial_dir(const Candidate& c, const TrialSpec& spec) {
  fs::create_directories(spec.dir);
  TrialFiles f{(fs::path(spec.dir) / "config.json").string(),
               (fs::path(spec.dir) / "result.json").string(),
               (fs::path(spec.dir) / "output.log").string()};
  // A 1-bit optimizer's freeze moved before the window (autotune/optimizer_axis.h).
  base::write_file_atomic(f.cfg, measured_config(c.config, spec.start_profile_step).dump(2) + "\n");
  fs::remove(f.result);
  fs::remove(f.log);
  remove_job_outputs(spec.dir);
  return f;
}

// hybrid-train for the trial, under the launcher.
std::vector<std::string> trial_argv(const Candidate& c, const TrialSpec& spec,
                                    const TrialFiles& f) {
  std::vector<std::string> cmd = {
      spec.train_bin, "--config", f.cfg, "--steps", std::to_string(spec.steps),
      "--result",     f.result};
  if (!spec.db.empty()) cmd.insert(cmd.end(), {"--db", spec.db});
  if (!spec.run_name.empty()) cmd.insert(cmd.end(), {"--name", spec.run_name});
  const std::string tmpl = spec.launcher_template.empty() ? default_launcher_template(spec.nprocs)
                                                          : spec.launcher_template;
  return expand_launcher(tmpl, cmd,
                         {{"nprocs", std::to_string(spec.nprocs)},
                          {"key", c.key},
                          {"config", f.cfg},
                          {"dir", spec.dir}});
}

// The measured steps: the result file's, refined by the run's rows in the store.
MeasureWindow measure_window(const TrialSpec& spec, const ResultFile& rf,
                             profiler::RunStore* store) {
  MeasureWindow window;
  window.start_step = spec.start_profile_step;
  window.end_step = spec.steps;
  window.statistic = spec.statistic;
  if (store && rf.json && rf.json->contains("run_id") && (*rf.json)["run_id"].is_number_integer()) {
    try {
      auto steps = store->steps((*rf.json)["run_id"].get<int64_t>());
      std::sort(steps.begin(), steps.end(),
                [](const auto& a, const auto& b) { return a.step < b.step; });
      for (const auto& s : steps) window.store_step_ms.push_back(s.step_ms);
    } catch (const std::exception&) {
      // The run's rows are a refinement; the result file alone still measures the trial.
    }
  }
  return window;
}

// What the scheduler did to a trial that timed out: never started, or cancelled.
void add_scheduler_reason(TrialOutcome& outcome, const ProcessResult& pr, const SchedulerJob& job,
                          double timeout_s) {
  if (pr.exit.timed_out && job.queued && !job.started)
    outcome.reason = fmt::format(
        "still pending in the scheduler's queue (Slurm job {}) at the trial timeout of {:g} s: "
        "it never started; cancelled",
        *job.job_id, timeout_s);
  else if (pr.exit.timed_out && job.job_id)
    outcome.reason += fmt::format("; Slurm job {} cancelled", *job.job_id);
}

// Its launcher is gone, so a run it left `running` (its rank 0 killed, or on a
// host that was lost) is over: failed, with the trial's reason, and linked.
void close_left_runs(TrialRun& run, const TrialSpec& spec, profiler::RunStore* store,
                     double started_at) {
  if (!store || spec.run_name.empty() || run.outcome.status == profiler::TrialStatus::ok) return;
  const auto left = store->fail_running_runs(
      spec.run_name, started_at,
      fmt::format("trial ended {}: {}", profiler::to_string(run.outcome.status),
                  run.outcome.reason));
  if (!run.outcome.run_id && left.size() == 1) run.outcome.run_id = left[0];
}

}  // namespace

TrialRun run_trial(const Candidate& c, const TrialSpec& spec, profiler::RunStore* store,
                   const std::atomic<bool>* cancel) {
  TrialRun run;
  const TrialFiles files = prepare_trial_dir(c, spec);
  run.argv = trial_argv(c, spec, files);

  ProcessOptions po;
  po.timeout_s = spec.timeout_s;
  po.log_path = files.log;
  po.cancel = cancel;
  // Rank 0 stamps its run on its own host's clock: allow for clocks a few minutes apart.
  const double started_at =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() -
      300.0;
  SchedulerWatch watch(files.log, [&](const std::string& what) {
    if (spec.notice) spec.notice(fmt::format("trial {}: {}", c.key, what));
  });
  const ProcessResult pr = run_process(run.argv, po);
  const SchedulerJob job = watch.stop();
  // Given up on (timeout, interrupt): its Slurm job must not stay queued or running.
  if ((pr.exit.timed_out || pr.cancelled) && job.job_id) cancel_job(*job.job_id);
  append_job_outputs(spec.dir, files.log);
  run.wall_s = pr.wall_s;
  run.cancelled = pr.cancelled;
  run.output_tail = base::read_tail(files.log);

  const ResultFile rf = read_result_file(files.result);
  const MeasureWindow window = measure_window(spec, rf, store);
  // The launcher's report of a lost host may precede pages of the ranks' own errors.
  run.outcome =
      classify_trial(pr.exit, rf, window, base::read_tail(files.log, 100000, size_t(1) << 18));
  add_scheduler_reason(run.outcome, pr, job, spec.timeout_s);
  close_left_runs(run, spec, store, started_at);
  return run;
}

SteadyTrial run_trial_steady(const Candidate& c, const TrialSpec& spec, profiler::RunStore* store,
                             const NoiseOptions& noise, const std::atomic<bool>* cancel) {
  SteadyTrial best;
  for (int attempt = 1; attempt <= 1 + std::max(0, noise.remeasure); ++attempt) {
    TrialRun run = run_trial(c, spec, store, cancel);
    const auto& m = run.outcome.measurement;
    if (run.cancelled || !m || m->window_ms.empty()) {
      // Interrupted, failed, or nothing per step to judge: this attempt is the answer,
      // unless an earlier one measured the trial.
      if (attempt == 1 || run.cancelled) best.run = std::move(run);
      best.attempts = attempt;
      return best;
    }
    const profiler::StepSpread spread = spread_of(m->window_ms);
    if (attempt == 1 || robust_cv(spread) < robust_cv(*best.spread)) {
      best.run = std::move(run);
      best.spread = spread;
    }
    best.attempts = attempt;
    best.noisy = is_noisy(*best.spread, noise.threshold);
    if (!best.noisy) break;
  }
  return best;
}

}  // namespace hybrid::autotune
