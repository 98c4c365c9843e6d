#include "autotune/generate_sweep.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "autotune/noise.h"
#include "autotune/process.h"
#include "base/subprocess.h"
#include "base/units.h"

namespace hybrid::autotune {

namespace fs = std::filesystem;
using nlohmann::json;

std::string trial_run_name(const GenerateCandidate& c) { return "hybrid-tune generate " + c.key(); }

std::vector<std::string> generate_trial_argv(const GenerateSpec& s, const GenerateCandidate& c,
                                             const std::string& bin,
                                             const std::string& result_path) {
  return {bin,
          "--model",
          s.model,
          "--prompts",
          s.prompts,
          "--max-new-tokens",
          std::to_string(s.max_new_tokens),
          "--dtype",
          s.dtype,
          "--batch",
          std::to_string(c.batch),
          "--cache-dtype",
          std::string(kernels::dtype_name(c.cache_dtype)),
          "--json",
          result_path};
}

namespace {

// The metric from hybrid-generate's result file; the reason when it has none.
std::string read_measurement(GenerateTrial& t, const std::string& path, Metric m) {
  std::ifstream in(path);
  if (!in) return "no result file";
  const json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("tokens_per_s") || !j["tokens_per_s"].is_number())
    return "a result file without tokens_per_s";
  t.tokens_per_s = j["tokens_per_s"].get<double>();
  const json tpot = j.value("tpot_ms", json());
  const bool timed = tpot.is_object() && tpot.contains("p99") && tpot["p99"].is_number();
  if (timed) t.tpot_p99_ms = tpot["p99"].get<double>();
  if (tpot.is_object() && tpot.contains("samples") && tpot["samples"].is_array())
    for (const json& v : tpot["samples"])
      if (v.is_number()) t.tpot_ms.push_back(v.get<double>());
  if (m == Metric::latency && !timed) return "no decode step was timed (tpot_ms.p99 missing)";
  t.value = m == Metric::latency ? t.tpot_p99_ms : t.tokens_per_s;
  if (j.contains("run_id") && j["run_id"].is_number_integer())
    t.run_id = j["run_id"].get<int64_t>();
  return "";
}

}  // namespace

GenerateTrial run_generate_trial(const GenerateSpec& s, const GenerateCandidate& c,
                                 const GenerateSweepOptions& o) {
  GenerateTrial t;
  t.candidate = c;
  const fs::path dir = fs::path(o.dir) / c.key();
  fs::create_directories(dir);
  const std::string result = (dir / "result.json").string(), log = (dir / "output.log").string();
  fs::remove(result);
  fs::remove(log);
  ProcessOptions po;
  po.timeout_s = s.trial_timeout_s;
  po.log_path = log;
  po.cancel = o.cancel;
  std::vector<std::string> argv = generate_trial_argv(s, c, o.generate_bin, result);
  if (!o.db.empty()) argv.insert(argv.end(), {"--db", o.db, "--name", trial_run_name(c)});
  const ProcessResult pr = run_process(argv, po);
  if (pr.cancelled) {
    t.status = "cancelled";
  } else if (pr.exit.timed_out) {
    t.status = "timeout";
    t.reason = fmt::format("killed at the trial timeout of {:g} s", s.trial_timeout_s);
  } else if (!pr.exit.started || pr.exit.signal || pr.exit.exit_code != 0) {
    t.status = "failed";
    t.reason = pr.exit.started ? fmt::format("exit status {}, signal {}: {}", pr.exit.exit_code,
                                             pr.exit.signal, base::read_tail(log, 3))
                               : pr.exit.start_error;
  } else if (std::string why = read_measurement(t, result, s.metric); !why.empty()) {
    t.status = "failed";
    t.reason = why;
  } else {
    t.status = "ok";
  }
  return t;
}

GenerateTrial run_steady_trial(const GenerateSpec& s, const GenerateCandidate& c,
                               const GenerateSweepOptions& o) {
  const auto cv = [](const GenerateTrial& t) { return robust_cv(spread_of(t.tpot_ms)); };
  const auto noisy = [&](const GenerateTrial& t) {
    return t.status == "ok" && t.tpot_ms.size() >= 2 &&
           is_noisy(spread_of(t.tpot_ms), o.noise_threshold);
  };
  GenerateTrial kept = run_generate_trial(s, c, o);
  int attempts = 1;
  while (noisy(kept) && attempts <= o.remeasure) {
    ++attempts;
    GenerateSweepOptions again = o;
    again.dir = (fs::path(o.dir) / fmt::format("remeasure-{}", attempts)).string();
    GenerateTrial t = run_generate_trial(s, c, again);
    if (t.status == "cancelled") return t;
    if (t.status == "ok" && !t.tpot_ms.empty() && cv(t) < cv(kept)) kept = std::move(t);
  }
  kept.attempts = attempts;
  if (kept.status == "ok" && !kept.tpot_ms.empty()) kept.robust_cv = cv(kept);
  kept.noisy = noisy(kept);
  if (kept.noisy)
    kept.reason = fmt::format("noisy: its decode steps' robust CV is {:.1f} % after {} attempt(s)",
                              100 * kept.robust_cv, attempts);
  return kept;
}

GenerateSweepResult run_generate_sweep(const GenerateSpec& s,
                                       const std::vector<GenerateCandidate>& candidates,
                                       const GenerateSweepOptions& o, std::ostream& log) {
  GenerateSweepResult r;
  for (const auto& c : candidates) {
    GenerateTrial t;
    t.candidate = c;
    t.reason = c.pruned;
    if (r.interrupted) t.status = "cancelled";
    if (c.pruned.empty() && !r.interrupted) t = run_steady_trial(s, c, o);
    r.interrupted = r.interrupted || t.status == "cancelled";
    log << fmt::format("{:<10} predicted {:>10} (cache {:>10})  {}", c.key(),
                       base::format_bytes(c.predicted_bytes), base::format_bytes(c.predicted_cache),
                       t.status);
    if (t.status == "ok")
      log << fmt::format(": {:.1f} tokens/s, tpot p99 {:.2f} ms{}", t.tokens_per_s, t.tpot_p99_ms,
                         t.noisy ? " (" + t.reason + ")" : "");
    else if (!t.reason.empty())
      log << ": " << t.reason;
    log << "\n";
    const bool better_than_best =
        t.status == "ok" && (!r.best || better(s.metric, t.value, r.trials[*r.best].value));
    if (better_than_best) r.best = r.trials.size();
    r.trials.push_back(std::move(t));
  }
  return r;
}

json generate_sweep_json(const GenerateSpec& s, const GenerateSweepResult& r,
                         const std::string& bin) {
  json trials = json::array();
  for (const auto& t : r.trials)
    trials.push_back({{"key", t.candidate.key()},
                      {"batch", t.candidate.batch},
                      {"cache_dtype", kernels::dtype_name(t.candidate.cache_dtype)},
                      {"predicted_bytes", t.candidate.predicted_bytes},
                      {"predicted_kv_cache_bytes", t.candidate.predicted_cache},
                      {"status", t.status},
                      {"reason", t.reason},
                      {"tokens_per_s", t.tokens_per_s},
                      {"tpot_p99_ms", t.tpot_p99_ms},
                      {"run_id", t.run_id},
                      {"attempts", t.attempts},
                      {"robust_cv", t.robust_cv},
                      {"noisy", t.noisy}});
  json out = {{"metric", generate_metric_name(s.metric)}, {"trials", trials}};
  if (r.best) {
    const GenerateTrial& b = r.trials[*r.best];
    out["value"] = b.value;
    out["batch"] = b.candidate.batch;
    out["cache_dtype"] = kernels::dtype_name(b.candidate.cache_dtype);
    out["command"] =
        fmt::format("{}", fmt::join(generate_trial_argv(s, b.candidate, bin, "OUT"), " "));
  }
  return out;
}

}  // namespace hybrid::autotune
