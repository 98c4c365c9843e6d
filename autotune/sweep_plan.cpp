#include "autotune/sweep_plan.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "autotune/launcher.h"
#include "autotune/optimizer_axis.h"
#include "autotune/pruning.h"
#include "autotune/strategy.h"
#include "autotune/trial_runner.h"
#include "autotune/tune_error.h"

namespace hybrid::autotune {

namespace fs = std::filesystem;
using nlohmann::json;

json SweepPlan::identity() const {
  const auto& s = settings;
  json j = {{"space", space.to_json()},
            {"strategy", s.strategy},
            {"metric", std::string(metric_column(s.metric))},
            {"nprocs", s.nprocs},
            {"launcher", s.launcher},
            {"steps", s.steps},
            {"start_profile_step", s.start_step},
            {"statistic", statistic_name(s.statistic)},
            {"prune", s.prune}};
  if (s.strategy == "random") j["seed"] = s.seed;
  // Other hosts or slots are another cluster: another sweep.
  for (const auto& h : s.hosts) j["hosts"].push_back({h.host, h.slots});
  return j;
}

namespace {

json read_json_file(const std::string& path) {
  // load_config validates (and names the key at fault); the raw JSON is kept
  // to derive candidates from.
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str(), nullptr, true, true);
}

SweepSettings resolve(const TuneOptions& o, const AutotuningOptions& at) {
  SweepSettings s;
  s.config_path = o.config;
  s.space_path = o.space;
  if (o.nprocs < 1) throw TuneError(fmt::format("--nprocs must be at least 1, got {}", o.nprocs));
  s.nprocs = o.nprocs;
  s.launcher = resolve_launcher(o.launcher, o.nprocs, o.hostfile);
  if (!o.hostfile.empty()) s.hosts = read_hostfile(o.hostfile);
  split_words(s.launcher);  // quoting errors now, not at the first trial
  s.strategy =
      parse_strategy(o.strategy.empty() ? strategy_from_tuner_type(at.tuner_type) : o.strategy);
  s.metric = parse_metric(o.metric.empty() ? at.metric : o.metric);
  s.db = o.db;
  s.out = o.out.empty() ? (fs::path(o.db).parent_path() / "best.json").string() : o.out;
  s.dry_run = o.dry_run;
  s.prune = !o.no_prune;
  s.probe = !o.no_probe;
  if (o.max_trials < 0)
    throw TuneError(fmt::format("--max-trials must be positive, got {}", o.max_trials));
  s.max_trials = o.max_trials > 0 ? o.max_trials : at.tuner_num_trials;
  if (o.time_budget_s < 0)
    throw TuneError(fmt::format("--time-budget must be >= 0 s, got {}", o.time_budget_s));
  s.time_budget_s = o.time_budget_s;
  s.early_stop = o.early_stop >= 0 ? o.early_stop : at.tuner_early_stopping;
  if (!(o.trial_timeout_s > 0))
    throw TuneError(fmt::format("--trial-timeout must be > 0 s, got {}", o.trial_timeout_s));
  s.trial_timeout_s = o.trial_timeout_s;
  s.steps = o.steps > 0 ? o.steps : at.end_profile_step;
  s.start_step = o.start_step > 0 ? o.start_step : at.start_profile_step;
  if (s.start_step > s.steps)
    throw TuneError(fmt::format(
        "the first measured step ({}, autotuning.start_profile_step or --start-step) is after "
        "the last ({}, autotuning.end_profile_step or --steps)",
        s.start_step, s.steps));
  s.statistic = parse_statistic(o.statistic);
  s.seed = o.seed;
  s.min_gain = o.min_gain;
  if (!(o.noise_threshold > 0))
    throw TuneError(fmt::format("--noise-threshold must be > 0, got {}", o.noise_threshold));
  if (o.remeasure < 0)
    throw TuneError(fmt::format("--remeasure must be >= 0, got {}", o.remeasure));
  if (o.confirm_rounds < 0)
    throw TuneError(fmt::format("--confirm-rounds must be >= 0, got {}", o.confirm_rounds));
  s.noise.threshold = o.noise_threshold;
  s.noise.remeasure = o.remeasure;
  s.noise.confirm_rounds = o.confirm_rounds;
  s.noise.confirm_best = o.confirm_best;
  s.self_exe = self_executable();
  s.train_bin = o.train_bin.empty() ? find_train_binary(s.self_exe) : o.train_bin;
  s.name = o.name.empty() ? fmt::format("{}/{}/{}/np{}", fs::path(o.config).stem().string(),
                                        s.strategy, metric_name(s.metric), s.nprocs)
                          : o.name;
  return s;
}

}  // namespace

SweepPlan plan_sweep(const TuneOptions& o) {
  SweepPlan p;
  if (o.config.empty()) throw TuneError("--config is required");
  if (o.nprocs < 1) throw TuneError(fmt::format("--nprocs must be at least 1, got {}", o.nprocs));
  p.base_cfg = engine::load_config(o.config, o.nprocs);
  p.base = read_json_file(o.config);
  p.autotuning = parse_autotuning(p.base);
  p.settings = resolve(o, p.autotuning);
  for (const auto& k : p.autotuning.ignored_keys)
    p.notes.push_back("config: ignoring " + k + " (DeepSpeed launcher setting)");

  p.space = o.space.empty() ? default_space(p.autotuning) : load_space(o.space);
  p.notes.insert(p.notes.end(), p.space.notes.begin(), p.space.notes.end());

  p.device = detect_device(std::string(engine::to_string(p.base_cfg.device)));
  if (!p.device.note.empty()) p.notes.push_back(p.device.note);
  p.budget = memory_budget(p.base_cfg, p.device, p.settings.nprocs);

  EnumerateOptions eo;
  eo.world_size = p.settings.nprocs;
  eo.offload_supported = p.device.kind != kernels::BackendKind::cpu;
  eo.max_train_batch_size = p.autotuning.max_train_batch_size;
  Enumeration e = enumerate_candidates(p.base, p.space, eo);
  p.enumerated = e.candidates.size();
  p.dropped = std::move(e.dropped);
  p.notes.insert(p.notes.end(), e.notes.begin(), e.notes.end());

  const auto predictions =
      predict_all(e.candidates, std::string(engine::to_string(p.base_cfg.device)));
  std::vector<size_t> kept;
  if (p.settings.prune) {
    PruneResult pr = prune(e.candidates, predictions, p.budget);
    kept = std::move(pr.kept);
    p.pruned = std::move(pr.pruned);
    for (auto& d : drop_unneeded_memory_savers(e.candidates, kept, p.space, p.budget,
                                               std::string(engine::to_string(p.base_cfg.device))))
      p.dropped.push_back(std::move(d));
  } else {
    for (size_t i = 0; i < e.candidates.size(); ++i) kept.push_back(i);
    p.notes.push_back(
        "--no-prune: candidates predicted over the memory budget run anyway, and memory-saving "
        "values (offloading, activation checkpointing) where they are not needed");
  }
  for (size_t i : thin_micro_batches(e.candidates, kept, p.space.thin_micro_batch_sizes))
    p.dropped.push_back({e.candidates[i].key, e.candidates[i].config,
                         fmt::format("not among the {} micro-batch sizes tuned per stage "
                                     "(autotuning.num_tuning_micro_batch_sizes)",
                                     p.space.thin_micro_batch_sizes)});
  for (size_t i : kept) {
    p.runnable.push_back(std::move(e.candidates[i]));
    p.memory.push_back(predictions[i]);
  }
  for (const auto& c : p.runnable)
    if (c.parsed.optimizer.onebit()) {
      p.notes.push_back(onebit_trial_note(p.settings.start_step, p.settings.steps));
      break;
    }
  return p;
}

}  // namespace hybrid::autotune
