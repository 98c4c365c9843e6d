#include "autotune/rollout_sweep.h"

#include <fmt/format.h>

#include <filesystem>

#include "autotune/candidate.h"
#include "autotune/trial_runner.h"
#include "base/units.h"
#include "profiler/generation_data.h"

namespace hybrid::autotune {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_rollouts(RolloutTrial& t, const json& result, Metric m) {
  if (!result.contains("rollouts") || !result["rollouts"].is_array() || result["rollouts"].empty())
    return "the result has no rollouts";
  const json& all = result["rollouts"];
  const size_t first = all.size() > 1 ? 1 : 0;  // the first one sets up: left out
  double tokens = 0, ms = 0;
  std::vector<double> tpot;
  for (size_t i = first; i < all.size(); ++i) {
    const json& r = all[i];
    tokens += r.value("new_tokens", 0.0);
    ms += r.value("gather_ms", 0.0) + r.value("generate_ms", 0.0);
    const json samples = r.contains("tpot_ms") && r["tpot_ms"].is_object()
                             ? r["tpot_ms"].value("samples", json::array())
                             : json::array();
    for (const json& v : samples) tpot.push_back(v.get<double>());
  }
  if (ms <= 0) return "the rollouts took no time";
  t.rollouts = int(all.size() - first);
  t.tokens_per_s = tokens / (ms / 1e3);
  const auto p = profiler::latency_percentiles(tpot);
  if (p) t.tpot_p99_ms = p->p99;
  if (m == Metric::latency && !p) return "no decode step was timed (rollouts' tpot_ms missing)";
  t.value = m == Metric::latency ? t.tpot_p99_ms : t.tokens_per_s;
  return "";
}

RolloutTrial run_rollout_trial(const RolloutSpec& s, const RolloutCandidate& c,
                               const RolloutSweepOptions& o) {
  RolloutTrial t;
  t.candidate = c;
  Candidate trial;
  trial.key = c.key();
  trial.config = c.config;
  trial.parsed = engine::parse_config(c.config, s.nprocs);
  trial.world_size = s.nprocs;
  TrialSpec spec;
  spec.train_bin = o.train_bin;
  spec.launcher_template = s.launcher;
  spec.nprocs = s.nprocs;
  spec.steps = s.steps;
  spec.start_profile_step = 1;
  spec.timeout_s = s.trial_timeout_s;
  spec.dir = (fs::path(o.dir) / c.key()).string();
  spec.db = o.db;
  if (!o.db.empty()) spec.run_name = "hybrid-tune rollout " + c.key();
  const TrialRun run = run_trial(trial, spec, nullptr, o.cancel);
  if (run.cancelled) {
    t.status = "cancelled";
    return t;
  }
  if (run.outcome.status != profiler::TrialStatus::ok) {
    t.status = std::string(profiler::to_string(run.outcome.status));
    t.reason = run.outcome.reason;
    return t;
  }
  const ResultFile rf = read_result_file((fs::path(spec.dir) / "result.json").string());
  const std::string why = rf.json ? read_rollouts(t, *rf.json, s.metric) : rf.problem;
  t.status = why.empty() ? "ok" : "failed";
  t.reason = why;
  return t;
}

namespace {

void log_trial(std::ostream& log, const RolloutTrial& t) {
  const RolloutCandidate& c = t.candidate;
  log << fmt::format("{:<20} predicted {:>10} (cache {:>10})  {}", c.key(),
                     base::format_bytes(c.predicted_bytes), base::format_bytes(c.predicted_cache),
                     t.status);
  if (t.status == "ok")
    log << fmt::format(": {:.1f} tokens/s, tpot p99 {:.2f} ms over {} rollout(s)", t.tokens_per_s,
                       t.tpot_p99_ms, t.rollouts);
  else if (!t.reason.empty())
    log << ": " << t.reason;
  log << "\n";
}

}  // namespace

RolloutSweepResult run_rollout_sweep(const RolloutSpec& s,
                                     const std::vector<RolloutCandidate>& candidates,
                                     const RolloutSweepOptions& o, std::ostream& log) {
  RolloutSweepResult r;
  for (const auto& c : candidates) {
    RolloutTrial t;
    t.candidate = c;
    t.reason = c.pruned;
    if (r.interrupted) t.status = "cancelled";
    if (c.pruned.empty() && !r.interrupted) t = run_rollout_trial(s, c, o);
    r.interrupted = r.interrupted || t.status == "cancelled";
    log_trial(log, t);
    if (t.status == "ok" && (!r.best || better(s.metric, t.value, r.trials[*r.best].value)))
      r.best = r.trials.size();
    r.trials.push_back(std::move(t));
  }
  return r;
}

json rollout_sweep_json(const RolloutSpec& s, const RolloutSweepResult& r) {
  json trials = json::array();
  for (const auto& t : r.trials) {
    const RolloutCandidate& c = t.candidate;
    trials.push_back({{"key", c.key()},
                      {"batch", c.batch},
                      {"cache_dtype", kernels::dtype_name(c.cache_dtype)},
                      {"inference_tp_size", c.inference_tp_size},
                      {"pin_parameters", c.pin_parameters},
                      {"predicted_bytes", c.predicted_bytes},
                      {"predicted_kv_cache_bytes", c.predicted_cache},
                      {"status", t.status},
                      {"reason", t.reason},
                      {"rollouts", t.rollouts},
                      {"tokens_per_s", t.tokens_per_s},
                      {"tpot_p99_ms", t.tpot_p99_ms}});
  }
  json out = {{"mode", "rollout"},
              {"metric", s.metric == Metric::latency ? "latency_p99" : "tokens_per_s"},
              {"nprocs", s.nprocs},
              {"trials", trials}};
  if (r.best) {
    const RolloutTrial& b = r.trials[*r.best];
    out["value"] = b.value;
    out["key"] = b.candidate.key();
    out["batch"] = b.candidate.batch;
    out["cache_dtype"] = kernels::dtype_name(b.candidate.cache_dtype);
    out["inference_tp_size"] = b.candidate.inference_tp_size;
    out["pin_parameters"] = b.candidate.pin_parameters;
    out["config"] = b.candidate.config;
  }
  return out;
}

}  // namespace hybrid::autotune
