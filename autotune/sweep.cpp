#include "autotune/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>

#include "autotune/best_config.h"
#include "autotune/cost_model.h"
#include "autotune/launcher.h"
#include "autotune/report.h"
#include "autotune/strategy.h"
#include "autotune/sweep_run.h"
#include "autotune/test_pause.h"
#include "autotune/tie_break.h"
#include "autotune/trial_runner.h"
#include "autotune/tune_error.h"
#include "base/subprocess.h"
#include "base/units.h"
#include "profiler/store/run_store.h"
#include "profiler/tables/sweep_leaderboard.h"

namespace hybrid::autotune {

namespace fs = std::filesystem;
using profiler::TrialRow;
using profiler::TrialStatus;

namespace {

using Clock = std::chrono::steady_clock;

std::vector<StepFeatures> features_of(const SweepPlan& plan, const ClusterRates& rates) {
  std::vector<StepFeatures> f;
  for (const auto& c : plan.runnable) f.push_back(step_features(c.parsed, c.world_size, rates));
  return f;
}

std::unique_ptr<Strategy> make_strategy(const SweepPlan& plan, std::vector<StepFeatures> features) {
  const auto& s = plan.settings;
  if (s.strategy == "random") return make_random_strategy(s.seed, plan.runnable.size());
  if (s.strategy == "model") {
    ModelStrategyOptions mo;
    mo.metric = s.metric;
    mo.min_gain = s.min_gain;
    return make_model_strategy(std::move(features), mo);
  }
  return make_grid_strategy();
}

void fill_from_outcome(TrialRow& row, const SteadyTrial& steady, const NoiseOptions& noise,
                       Metric metric) {
  const TrialRun& run = steady.run;
  const TrialOutcome& o = run.outcome;
  row.status = o.status;
  row.reason = o.reason;
  row.wall_s = run.wall_s;
  row.output_tail = run.output_tail;
  row.run_id = o.run_id;
  row.peak_mem_bytes = o.peak_mem_bytes;
  row.metric.reset();
  row.tokens_per_s.reset();
  row.samples_per_s.reset();
  row.flops_per_s.reset();
  row.latency_ms.reset();
  if (o.measurement) {
    const Measurement& m = *o.measurement;
    row.metric = metric_value(metric, m);
    row.tokens_per_s = m.tokens_per_s;
    row.samples_per_s = m.samples_per_s;
    row.flops_per_s = m.flops_per_s;
    row.latency_ms = m.step_ms;
  }
  row.spread = steady.spread;
  row.attempts = steady.attempts;
  row.noisy = steady.noisy && o.measurement;
  if (row.noisy)
    row.reason += fmt::format("; noisy after {} measurement(s): {} over the threshold {:.0f} %",
                              steady.attempts, describe_spread(*row.spread), 100 * noise.threshold);
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void print_header(const SweepRun& r) {
  const auto& s = r.plan.settings;
  const auto& plan = r.plan;
  r.out << fmt::format(
      "sweep {} '{}': strategy {}, metric {} ({} is better), {} rank(s) via `{}`\n", r.sweep.id,
      s.name, s.strategy, metric_name(s.metric), higher_is_better(s.metric) ? "higher" : "lower",
      s.nprocs, s.launcher);
  r.out << fmt::format(
      "{} runnable candidates, {} pruned by the memory model (budget {} per rank: {}), {} dropped; "
      "at most {} trials of {} steps (measured: {} of steps {}..{})\n",
      plan.runnable.size(), plan.pruned.size(), base::format_bytes(plan.budget.bytes),
      plan.budget.source, plan.dropped.size(), r.planned, s.steps, statistic_name(s.statistic),
      s.start_step, s.steps);
  if (!plan.pruned.empty()) r.out << "pruned by the memory model:\n" << pruned_table(plan.pruned);
  r.out.flush();
}

// Which budget stops the sweep before its next trial, or nullopt to go on.
std::optional<std::string> budget_stop(const SweepRun& r) {
  const auto& s = r.plan.settings;
  if (r.history.size() >= size_t(s.max_trials))
    return fmt::format("trial budget reached ({} trials)", s.max_trials);
  if (s.time_budget_s > 0 && seconds_since(r.t_start) >= s.time_budget_s)
    return fmt::format("time budget reached ({})", base::format_duration(s.time_budget_s));
  if (s.early_stop > 0 && trials_since_improvement(s.metric, r.history) >= size_t(s.early_stop))
    return fmt::format("early stop: {} trials without improvement", s.early_stop);
  return std::nullopt;
}

// The cost model fitted to the ok trials so far.
CostModel fitted_model(const SweepRun& r) {
  CostModel model;
  for (const auto& h : r.history)
    if (h.ok) model.observe(r.features[h.index], h.step_s);
  return model;
}

TrialSpec trial_spec(const SweepRun& r, const Candidate& c) {
  const auto& s = r.plan.settings;
  TrialSpec spec;
  spec.train_bin = s.train_bin;
  spec.launcher_template = s.launcher;
  spec.nprocs = s.nprocs;
  spec.steps = s.steps;
  spec.start_profile_step = s.start_step;
  spec.statistic = s.statistic;
  spec.timeout_s = s.trial_timeout_s;
  spec.db = s.db;
  spec.notice = [&out = r.out](const std::string& what) { out << what << std::endl; };
  spec.run_name = fmt::format("{}#{}/{}", s.name, r.sweep.id, c.key);
  spec.dir = (fs::path(s.db).parent_path() / "tune" / fmt::format("sweep-{}", r.sweep.id) / c.key)
                 .string();
  return spec;
}

// Runs candidate i and records it; nullopt when the trial was interrupted.
std::optional<TrialRow> run_candidate(SweepRun& r, size_t i) {
  const Candidate& c = r.plan.runnable[i];
  // The cost model's prediction for every strategy (the model strategy's own when it has one).
  const double predicted_s =
      r.strategy->predicted_step_s(i).value_or(fitted_model(r).predict_s(r.features[i]));
  TrialRow row;
  row.sweep_id = r.sweep.id;
  row.key = c.key;
  row.config_json = c.config.dump();
  row.status = TrialStatus::running;
  row.predicted_mem_bytes = r.plan.memory[i].total();
  row.predicted_step_ms = predicted_s * 1e3;
  row.id = r.store.upsert_trial(row);

  const SteadyTrial steady =
      run_trial_steady(c, trial_spec(r, c), &r.store, r.plan.settings.noise, r.cancel);
  const TrialRun& run = steady.run;
  if (run.cancelled) {
    row.status = TrialStatus::pending;
    row.reason = "interrupted: hybrid-tune was stopped while this trial ran";
    row.output_tail = run.output_tail;
    r.store.upsert_trial(row);
    return std::nullopt;
  }
  fill_from_outcome(row, steady, r.plan.settings.noise, r.plan.settings.metric);
  if (row.run_id && !r.store.find_run(*row.run_id)) {
    // Only a run the store holds can be linked (a result may carry a stale id).
    row.reason += fmt::format(" (result names run {}, which the store does not hold)", *row.run_id);
    row.run_id.reset();
  }
  r.store.upsert_trial(row);
  r.wall_sum += run.wall_s;
  return row;
}

void record_and_report(SweepRun& r, size_t i, const TrialRow& row, size_t ran) {
  const auto& s = r.plan.settings;
  r.done[i] = true;
  r.history.push_back(observation_of(i, row));
  if (row.status == TrialStatus::ok && row.metric &&
      (!r.best || better(s.metric, *row.metric, *r.best->metric)))
    r.best = row;
  ProgressInfo pi;
  pi.done = r.history.size();
  pi.planned = std::max(r.planned, r.history.size());
  pi.trial = &row;
  pi.best = r.best ? &*r.best : nullptr;
  double eta = r.wall_sum / double(ran) * double(pi.planned - pi.done);
  if (s.time_budget_s > 0)
    eta = std::min(eta, std::max(0.0, s.time_budget_s - seconds_since(r.t_start)));
  pi.eta_s = eta;
  r.out << progress_line(s.metric, pi) << "\n";
  r.out.flush();
}

// Trials until a budget, the strategy or a cancel stops the sweep.
void run_trials(SweepRun& r, SweepResult& res) {
  while (true) {
    test_pause(r.out, "between-trials");
    if (r.cancel && r.cancel->load()) {
      res.interrupted = true;
      res.stop_reason = "interrupted";
      return;
    }
    if (auto why = budget_stop(r)) {
      res.stop_reason = *why;
      return;
    }
    std::vector<size_t> remaining;
    for (size_t i = 0; i < r.done.size(); ++i)
      if (!r.done[i]) remaining.push_back(i);
    const auto pick = r.strategy->next(remaining, r.history);
    if (!pick) {
      res.stop_reason = r.strategy->stop_reason().empty() ? "every candidate was tried"
                                                          : r.strategy->stop_reason();
      return;
    }
    const auto row = run_candidate(r, *pick);
    if (!row) {
      res.interrupted = true;
      res.stop_reason = "interrupted";
      return;
    }
    ++res.ran;
    record_and_report(r, *pick, *row, res.ran);
  }
}

// When the best trial is within noise of others, runs them again interleaved and
// lets that decide (autotune/tie_break.h); records it and makes its winner the best.
void break_tie(SweepRun& r, SweepResult& res) {
  const auto& s = r.plan.settings;
  auto tied_at = tied_with_best(s.metric, res.trials, s.noise.max_tied);
  const bool tie = tied_at.size() >= 2;
  if (const auto order = profiler::rank_trials(metric_info(s.metric), res.trials);
      !tie && s.noise.confirm_best && order.size() >= 2)
    tied_at = {size_t(order[0]), size_t(order[1])};
  if (tied_at.size() < 2 || res.interrupted) return;
  std::vector<TrialRow> tied;
  for (size_t i : tied_at) tied.push_back(res.trials[i]);
  if (s.noise.confirm_rounds == 0) {
    r.out << fmt::format("tie within noise between {} trials (--confirm-rounds 0: not confirmed)\n",
                         tied.size());
    return;
  }
  // Finished and stored before a kill (in best.json's write): it stands, not run again.
  if (auto stored =
          stored_confirmation(r.store.tie_breaks(r.sweep.id), tied, s.noise.confirm_rounds)) {
    r.out << "confirmation run finished by an earlier invocation: its stored decision stands\n";
    for (const auto& t : tied)
      if (t.key == stored->winner_key) res.best = t;
    res.tie_break = std::move(stored);
    return;
  }
  r.out << fmt::format("{}: {} candidates, confirming in {} interleaved round(s)\n",
                       tie ? "tie within noise" : "best against the runner-up (--confirm-best)",
                       tied.size(), s.noise.confirm_rounds);
  r.out.flush();
  const auto measure = [&](size_t c, int round) -> std::vector<double> {
    const auto it = std::find_if(r.plan.runnable.begin(), r.plan.runnable.end(),
                                 [&](const Candidate& x) { return x.key == tied[c].key; });
    if (it == r.plan.runnable.end()) return {};
    TrialSpec spec = trial_spec(r, *it);
    spec.dir += fmt::format("/confirm-{}", round + 1);
    spec.run_name += fmt::format(" confirm {}", round + 1);
    const TrialRun run = run_trial(*it, spec, &r.store, r.cancel);
    const auto& m = run.outcome.measurement;
    return m ? m->window_ms : std::vector<double>{};
  };
  const auto stop = [&] { return r.cancel && r.cancel->load(); };
  const auto result = run_confirmation(s.metric, tied, s.noise.confirm_rounds, measure, stop);
  if (!result) {
    res.interrupted = true;
    res.stop_reason = "interrupted during the confirmation run";
    return;
  }
  res.tie_break = tie_break_row(s.metric, r.sweep.id, tied, *result);
  res.tie_break->summary =
      (tie ? "tie within noise; " : "best confirmed against the runner-up; ") + result->summary;
  res.tie_break->id = r.store.add_tie_break(*res.tie_break);
  res.best = tied[result->winner];
}

void print_summary(const SweepRun& r, const SweepResult& res) {
  const auto& s = r.plan.settings;
  r.out << fmt::format("\nsweep {} stopped: {}; {} trial(s) run now, {} in the sweep\n", r.sweep.id,
                       res.stop_reason, res.ran, res.trials.size());
  r.out << "leaderboard (" << metric_name(s.metric) << ", "
        << (higher_is_better(s.metric) ? "higher" : "lower") << " is better):\n"
        << leaderboard(s.metric, res.trials);
  if (!r.plan.pruned.empty())
    r.out << "pruned by the memory model (not run):\n" << pruned_table(r.plan.pruned);
  if (res.tie_break) r.out << res.tie_break->summary << "\n";
  r.out << format_memory_check(memory_check(res.trials)) << "\n";
  const CostModel model = fitted_model(r);
  std::string w;
  for (size_t f = 0; f < kFeatureCount; ++f)
    w += fmt::format(" {}={:.2f}", feature_name(f), model.weights()[f]);
  r.out << fmt::format("cost model ({}): weights{}; mean |error| {:.1f} % over {} ok trials\n",
                       r.rates.source, w, model.mean_relative_error() * 100, model.observations());
}

void write_best(const SweepRun& r, SweepResult& res) {
  const auto& s = r.plan.settings;
  if (!res.best) {
    r.out << "no trial succeeded: no best config written\n";
    return;
  }
  write_best_config(s.out, nlohmann::json::parse(res.best->config_json), s.nprocs,
                    [&r] { test_pause(r.out, "best-config"); });
  res.best_path = s.out;
  const auto command = expand_launcher(s.launcher, {s.train_bin, "--config", s.out},
                                       {{"nprocs", std::to_string(s.nprocs)},
                                        {"key", res.best->key},
                                        {"config", s.out},
                                        {"dir", "."}});
  const std::string how = !res.tie_break ? ""
                          : res.tie_break->decided
                              ? "; won the confirmation run"
                              : "; a tie within noise even after the confirmation run";
  r.out << fmt::format(
      "best: {} = {} ({:.1f} ms/step{})\nbest config written to {}; run it with:\n  {}\n",
      res.best->key, format_metric(s.metric, *res.best->metric), res.best->latency_ms.value_or(0.0),
      how, s.out, base::shell_join(command));
}

}  // namespace

SweepResult run_sweep(const SweepPlan& plan, std::ostream& out, const std::atomic<bool>* cancel) {
  const auto& s = plan.settings;
  profiler::RunStore store(s.db);
  for (const auto& n : plan.notes) out << "note: " << n << "\n";
  if (const auto stale = store.mark_stale_runs(); !stale.empty())
    out << fmt::format("note: marked {} run(s) of dead processes as failed\n", stale.size());

  SweepRun r{plan, store, out, cancel};
  SweepResult res;
  open_sweep(r);
  res.sweep_id = r.sweep.id;
  std::string probe_note;
  r.rates = cluster_rates_for(plan, &store, true, probe_note);
  out << "note: " << probe_note << "\n";
  r.features = features_of(plan, r.rates);
  r.strategy = make_strategy(plan, r.features);
  restore_history(r);
  r.planned = std::min<size_t>(size_t(s.max_trials), plan.runnable.size());
  print_header(r);
  r.t_start = Clock::now();

  run_trials(r, res);
  // A killed tuner's trial process may have outlived the check above by a moment.
  store.mark_stale_runs();
  res.trials = store.trials(r.sweep.id);
  res.best = best_trial(s.metric, res.trials);
  break_tie(r, res);
  print_summary(r, res);
  write_best(r, res);
  store.set_sweep_status(r.sweep.id, res.interrupted ? profiler::SweepStatus::stopped
                                     : res.best      ? profiler::SweepStatus::done
                                                     : profiler::SweepStatus::failed);
  out.flush();
  return res;
}

}  // namespace hybrid::autotune
