#include "autotune/sweep.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "autotune/best_config.h"
#include "autotune/cost_model.h"
#include "autotune/launcher.h"
#include "autotune/probe.h"
#include "autotune/report.h"
#include "autotune/strategy.h"
#include "autotune/trial_runner.h"
#include "autotune/tune_error.h"
#include "engine/util/units.h"
#include "profiler/store/run_store.h"

namespace hybrid::autotune {

namespace fs = std::filesystem;
using profiler::TrialRow;
using profiler::TrialStatus;

namespace {

using Clock = std::chrono::steady_clock;

std::string host_name() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string("localhost");
}

bool finished(TrialStatus s) { return s != TrialStatus::running && s != TrialStatus::pending; }

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

// Trials without improvement at the end of the history (for early stopping).
size_t trials_since_improvement(Metric m, const std::vector<Observation>& history) {
  std::optional<double> best;
  size_t since = 0;
  for (const auto& h : history) {
    if (h.ok && (!best || better(m, h.metric, *best))) {
      best = h.metric;
      since = 0;
    } else {
      ++since;
    }
  }
  return since;
}

void fill_from_outcome(TrialRow& row, const TrialRun& run, Metric metric) {
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
}

}  // namespace

ClusterRates cluster_rates_for(const SweepPlan& plan, profiler::RunStore* store, bool may_probe, std::string& note) {
  const auto& s = plan.settings;
  std::optional<profiler::ProbeResult> probe;
  if (store) probe = store->latest_probe(host_name());
  if (!probe && store && may_probe && s.probe) {
    ProbeOptions po;
    po.device = plan.base_cfg.device;
    po.dtype = std::string(kernels::dtype_name(plan.base_cfg.param_dtype()));
    const std::string dir = (fs::path(s.db).parent_path() / "tune" / "probe").string();
    try {
      auto p = launch_probe(s.self_exe, s.nprocs, s.launcher, po, dir, 300);
      p.host = host_name();
      p.id = store->add_probe(p);
      probe = p;
      note = "no probe of this host in the store: ran one\n" + format_probe(p);
    } catch (const std::exception& e) {
      note = fmt::format("probe failed, using default rates: {}", e.what());
    }
  } else if (probe) {
    note = fmt::format("cost model inputs: latest probe {} of {}", probe->id, probe->host);
    if (probe->world_size != s.nprocs)
      note += fmt::format(" (measured with {} ranks, the sweep uses {}: run `hybrid-tune probe --nprocs {}` to refresh)",
                          probe->world_size, s.nprocs, s.nprocs);
  }
  if (probe) return rates_from_probe(*probe, plan.device.kind);
  if (note.empty()) note = "no probe in the store: default rates (run `hybrid-tune probe`)";
  return default_rates(plan.device.kind, s.nprocs);
}

void print_dry_run(const SweepPlan& plan, std::ostream& out) {
  const auto& s = plan.settings;
  std::unique_ptr<profiler::RunStore> store;
  if (fs::exists(s.db)) {
    try {
      store = std::make_unique<profiler::RunStore>(s.db, profiler::OpenMode::read_only);
    } catch (const std::exception& e) {
      out << "note: cannot read " << s.db << ": " << e.what() << "\n";
    }
  }
  std::string note;
  const ClusterRates rates = cluster_rates_for(plan, store.get(), false, note);
  for (const auto& n : plan.notes) out << "note: " << n << "\n";
  out << "note: " << note << "\n";
  const CostModel prior;
  out << fmt::format("dry run: {} candidates on {} rank(s), {} runnable, {} pruned (budget {} per rank, {}), {} dropped\n",
                     plan.enumerated, s.nprocs, plan.runnable.size(), plan.pruned.size(),
                     engine::format_bytes(plan.budget.bytes), plan.budget.source, plan.dropped.size());
  out << fmt::format("{:<44} {:>12} {:>14} {:>20}\n", "candidate", "pred. mem", "pred. ms/step",
                     fmt::format("pred. {}", metric_name(s.metric)));
  for (size_t i = 0; i < plan.runnable.size(); ++i) {
    const auto f = step_features(plan.runnable[i].parsed, s.nprocs, rates);
    const double t = prior.predict_s(f);
    out << fmt::format("{:<44} {:>12} {:>14.1f} {:>20}\n", plan.runnable[i].key,
                       engine::format_bytes(plan.memory[i].total()), t * 1e3,
                       format_metric(s.metric, metric_from_step_time(s.metric, t, f.samples_per_step,
                                                                     f.tokens_per_step, f.flops_per_step)));
  }
  if (!plan.pruned.empty()) out << "pruned by the memory model:\n" << pruned_table(plan.pruned);
  if (!plan.dropped.empty()) {
    out << "dropped:\n";
    for (const auto& d : plan.dropped) out << fmt::format("  {:<34} {}\n", d.key, d.reason);
  }
  out << "nothing was run (--dry-run)\n";
}

SweepResult run_sweep(const SweepPlan& plan, std::ostream& out, const std::atomic<bool>* cancel) {
  const auto& s = plan.settings;
  SweepResult res;
  profiler::RunStore store(s.db);
  for (const auto& n : plan.notes) out << "note: " << n << "\n";
  if (const auto stale = store.mark_stale_runs(); !stale.empty())
    out << fmt::format("note: marked {} run(s) of dead processes as failed\n", stale.size());

  // Find the sweep this command already started, or start it.
  const std::string identity = plan.identity().dump();
  const std::string base = plan.base.dump();
  std::optional<profiler::SweepInfo> sweep;
  for (const auto& sw : store.sweeps())
    if (sw.name == s.name && sw.space_json == identity && sw.base_config_json == base && (!sweep || sw.id > sweep->id))
      sweep = sw;
  std::map<std::string, TrialRow> previous;
  if (sweep) {
    for (auto& t : store.trials(sweep->id)) previous[t.key] = t;
    store.set_sweep_status(sweep->id, profiler::SweepStatus::running);
  } else {
    profiler::SweepInfo info;
    info.name = s.name;
    info.base_config_json = base;
    info.space_json = identity;
    info.strategy = s.strategy;
    info.metric = std::string(metric_column(s.metric));
    info.id = store.create_sweep(info);
    sweep = info;
  }
  res.sweep_id = sweep->id;
  store.add_pruned(sweep->id, plan.pruned);

  std::string probe_note;
  const ClusterRates rates = cluster_rates_for(plan, &store, true, probe_note);
  out << "note: " << probe_note << "\n";
  const auto features = features_of(plan, rates);
  auto strategy = make_strategy(plan, features);

  // What earlier invocations finished.
  std::vector<Observation> history;
  std::vector<bool> done(plan.runnable.size(), false);
  {
    std::vector<std::pair<double, Observation>> found;
    size_t rerun = 0;
    for (size_t i = 0; i < plan.runnable.size(); ++i) {
      auto it = previous.find(plan.runnable[i].key);
      if (it == previous.end()) continue;
      if (!finished(it->second.status)) {
        ++rerun;
        continue;
      }
      done[i] = true;
      Observation ob{i, it->second.status == TrialStatus::ok && it->second.metric.has_value(),
                     it->second.metric.value_or(0.0), it->second.latency_ms.value_or(0.0) / 1e3};
      found.emplace_back(it->second.updated_at, ob);
    }
    std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [t, ob] : found) history.push_back(ob);
    if (!previous.empty())
      out << fmt::format("resuming sweep {} '{}': {} trial(s) finished, {} left unfinished to run again\n", sweep->id,
                         s.name, history.size(), rerun);
  }
  const size_t planned = std::min<size_t>(size_t(s.max_trials), plan.runnable.size());
  out << fmt::format("sweep {} '{}': strategy {}, metric {} ({} is better), {} rank(s) via `{}`\n", sweep->id, s.name,
                     s.strategy, metric_name(s.metric), higher_is_better(s.metric) ? "higher" : "lower", s.nprocs,
                     s.launcher);
  out << fmt::format("{} runnable candidates, {} pruned by the memory model (budget {} per rank: {}), {} dropped; "
                     "at most {} trials of {} steps (measured: {} of steps {}..{})\n",
                     plan.runnable.size(), plan.pruned.size(), engine::format_bytes(plan.budget.bytes),
                     plan.budget.source, plan.dropped.size(), planned, s.steps, statistic_name(s.statistic),
                     s.start_step, s.steps);
  if (!plan.pruned.empty()) out << "pruned by the memory model:\n" << pruned_table(plan.pruned);
  out.flush();

  const auto t_start = Clock::now();
  double wall_sum = 0;
  std::optional<TrialRow> best;
  for (const auto& [k, t] : previous)
    if (t.status == TrialStatus::ok && t.metric && (!best || better(s.metric, *t.metric, *best->metric))) best = t;

  while (true) {
    if (cancel && cancel->load()) {
      res.interrupted = true;
      res.stop_reason = "interrupted";
      break;
    }
    if (history.size() >= size_t(s.max_trials)) {
      res.stop_reason = fmt::format("trial budget reached ({} trials)", s.max_trials);
      break;
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - t_start).count();
    if (s.time_budget_s > 0 && elapsed >= s.time_budget_s) {
      res.stop_reason = fmt::format("time budget reached ({})", engine::format_duration(s.time_budget_s));
      break;
    }
    if (s.early_stop > 0 && trials_since_improvement(s.metric, history) >= size_t(s.early_stop)) {
      res.stop_reason = fmt::format("early stop: {} trials without improvement", s.early_stop);
      break;
    }
    std::vector<size_t> remaining;
    for (size_t i = 0; i < done.size(); ++i)
      if (!done[i]) remaining.push_back(i);
    const auto pick = strategy->next(remaining, history);
    if (!pick) {
      res.stop_reason = strategy->stop_reason().empty() ? "every candidate was tried" : strategy->stop_reason();
      break;
    }
    const size_t i = *pick;
    const Candidate& c = plan.runnable[i];

    // The cost model's prediction for every strategy (the model strategy's own when it has one).
    CostModel model;
    for (const auto& h : history)
      if (h.ok) model.observe(features[h.index], h.step_s);
    const double predicted_s = strategy->predicted_step_s(i).value_or(model.predict_s(features[i]));

    TrialRow row;
    row.sweep_id = sweep->id;
    row.key = c.key;
    row.config_json = c.config.dump();
    row.status = TrialStatus::running;
    row.predicted_mem_bytes = plan.memory[i].total();
    row.predicted_step_ms = predicted_s * 1e3;
    row.id = store.upsert_trial(row);

    TrialSpec spec;
    spec.train_bin = s.train_bin;
    spec.launcher_template = s.launcher;
    spec.nprocs = s.nprocs;
    spec.steps = s.steps;
    spec.start_profile_step = s.start_step;
    spec.statistic = s.statistic;
    spec.timeout_s = s.trial_timeout_s;
    spec.db = s.db;
    spec.run_name = fmt::format("{}#{}/{}", s.name, sweep->id, c.key);
    spec.dir = (fs::path(s.db).parent_path() / "tune" / fmt::format("sweep-{}", sweep->id) / c.key).string();
    const TrialRun run = run_trial(c, spec, &store, cancel);
    if (run.cancelled) {
      row.status = TrialStatus::pending;
      row.reason = "interrupted: hybrid-tune was stopped while this trial ran";
      row.output_tail = run.output_tail;
      store.upsert_trial(row);
      res.interrupted = true;
      res.stop_reason = "interrupted";
      break;
    }
    fill_from_outcome(row, run, s.metric);
    if (row.run_id && !store.find_run(*row.run_id)) {
      // Only a run the store holds can be linked (a result may carry a stale id).
      row.reason += fmt::format(" (result names run {}, which the store does not hold)", *row.run_id);
      row.run_id.reset();
    }
    store.upsert_trial(row);
    ++res.ran;
    wall_sum += run.wall_s;
    done[i] = true;
    history.push_back({i, row.status == TrialStatus::ok && row.metric.has_value(), row.metric.value_or(0.0),
                       row.latency_ms.value_or(0.0) / 1e3});
    if (row.status == TrialStatus::ok && row.metric && (!best || better(s.metric, *row.metric, *best->metric)))
      best = row;

    ProgressInfo pi;
    pi.done = history.size();
    pi.planned = std::max(planned, history.size());
    pi.trial = &row;
    pi.best = best ? &*best : nullptr;
    double eta = wall_sum / double(res.ran) * double(pi.planned - pi.done);
    if (s.time_budget_s > 0)
      eta = std::min(eta, std::max(0.0, s.time_budget_s - std::chrono::duration<double>(Clock::now() - t_start).count()));
    pi.eta_s = eta;
    out << progress_line(s.metric, pi) << "\n";
    out.flush();
  }

  res.trials = store.trials(sweep->id);
  res.best = best_trial(s.metric, res.trials);
  out << fmt::format("\nsweep {} stopped: {}; {} trial(s) run now, {} in the sweep\n", sweep->id, res.stop_reason,
                     res.ran, res.trials.size());
  out << "leaderboard (" << metric_name(s.metric) << ", " << (higher_is_better(s.metric) ? "higher" : "lower")
      << " is better):\n"
      << leaderboard(s.metric, res.trials);
  if (!plan.pruned.empty()) out << "pruned by the memory model (not run):\n" << pruned_table(plan.pruned);
  out << format_memory_check(memory_check(res.trials)) << "\n";
  {
    CostModel model;
    for (const auto& h : history)
      if (h.ok) model.observe(features[h.index], h.step_s);
    std::string w;
    for (size_t f = 0; f < kFeatureCount; ++f) w += fmt::format(" {}={:.2f}", feature_name(f), model.weights()[f]);
    out << fmt::format("cost model ({}): weights{}; mean |error| {:.1f} % over {} ok trials\n", rates.source, w,
                       model.mean_relative_error() * 100, model.observations());
  }
  if (res.best) {
    write_best_config(s.out, nlohmann::json::parse(res.best->config_json), s.nprocs);
    res.best_path = s.out;
    out << fmt::format("best: {} = {} ({:.1f} ms/step)\nbest config written to {}; run it with:\n  {}\n",
                       res.best->key, format_metric(s.metric, *res.best->metric), res.best->latency_ms.value_or(0.0),
                       s.out, join_command(expand_launcher(s.launcher, {s.train_bin, "--config", s.out},
                                                           {{"nprocs", std::to_string(s.nprocs)}, {"key", res.best->key},
                                                            {"config", s.out}, {"dir", "."}})));
  } else {
    out << "no trial succeeded: no best config written\n";
  }
  store.set_sweep_status(sweep->id, res.interrupted ? profiler::SweepStatus::stopped
                                    : res.best      ? profiler::SweepStatus::done
                                                    : profiler::SweepStatus::failed);
  out.flush();
  return res;
}

}  // namespace hybrid::autotune
