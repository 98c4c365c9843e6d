#include "autotune/outcome.h"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>

#include "autotune/launcher_report.h"
#include "autotune/tune_error.h"
#include "base/json_read.h"
#include "base/statistics.h"

namespace hybrid::autotune {

using nlohmann::json;
using profiler::TrialStatus;

ResultFile read_result_file(const std::string& path) {
  ResultFile r;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    r.problem = "no result file";
    return r;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    r.json = json::parse(ss.str());
    if (!r.json->is_object()) {
      r.json.reset();
      r.problem = "result file is not a JSON object";
    }
  } catch (const json::parse_error& e) {
    r.problem = fmt::format("result file is not valid JSON: {}", e.what());
  }
  return r;
}

StepStatistic parse_statistic(const std::string& name) {
  if (name == "median") return StepStatistic::median;
  if (name == "min") return StepStatistic::min;
  throw TuneError(fmt::format("--statistic must be median or min, got \"{}\"", name));
}

const char* statistic_name(StepStatistic s) { return s == StepStatistic::min ? "min" : "median"; }

std::string signal_name(int sig) {
  static const std::pair<int, const char*> names[] = {
      {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
      {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
      {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
      {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"}, {SIGXCPU, "SIGXCPU"}};
  for (const auto& [n, name] : names)
    if (n == sig) return name;
  return fmt::format("signal {}", sig);
}

namespace {

double number_or(const json& j, const char* key, double fallback) {
  return base::number_at(j, key).value_or(fallback);
}

std::string error_message(const json& r) {
  if (r.contains("error") && r["error"].is_object()) {
    const std::string kind = base::string_at(r, "error.kind").value_or("");
    const std::string msg = base::string_at(r, "error.message").value_or("");
    return kind.empty() ? msg : kind + ": " + msg;
  }
  return "no error message in the result";
}

// Per-step times of the window, or empty when the window does not fit.
std::vector<double> window_of(const std::vector<double>& steps, const MeasureWindow& w) {
  const size_t lo = size_t(std::max(1, w.start_step)) - 1;
  const size_t hi = w.end_step > 0 ? size_t(w.end_step) : steps.size();
  if (steps.empty() || hi > steps.size() || lo >= hi) return {};
  return {steps.begin() + long(lo), steps.begin() + long(hi)};
}

}  // namespace

Measurement measure(const json& r, const MeasureWindow& w, std::string* source) {
  const double all_median_ms = number_or(r, "ms_per_step_median", 0.0);
  // Work per optimizer step, from the rates hybrid-train derived from its median.
  const double per_s = all_median_ms > 0 ? all_median_ms / 1e3 : 0.0;
  const double samples = number_or(r, "samples_per_s", 0.0) * per_s;
  const double tokens = number_or(r, "tokens_per_s", 0.0) * per_s;
  const double flops =
      number_or(r, "flops_per_step", number_or(r, "achieved_flops_per_s", 0.0) * per_s);

  std::vector<double> win;
  std::string src;
  if (r.contains("step_ms") && r["step_ms"].is_array()) {
    std::vector<double> steps;
    for (const auto& v : r["step_ms"])
      if (v.is_number()) steps.push_back(v.get<double>());
    win = window_of(steps, w);
    if (!win.empty())
      src = fmt::format("{} of steps {}..{} (result step_ms)", statistic_name(w.statistic),
                        w.start_step, w.start_step + int(win.size()) - 1);
  }
  if (win.empty()) {
    win = window_of(w.store_step_ms, w);
    if (!win.empty())
      src = fmt::format("{} of steps {}..{} (run store)", statistic_name(w.statistic), w.start_step,
                        w.start_step + int(win.size()) - 1);
  }
  Measurement m;
  m.step_ms = win.empty()                         ? all_median_ms
              : w.statistic == StepStatistic::min ? *std::min_element(win.begin(), win.end())
                                                  : base::median(win);
  if (win.empty()) src = "median over all steps (hybrid-train)";
  m.window_ms = win;
  if (m.step_ms > 0) {
    m.samples_per_s = samples / (m.step_ms / 1e3);
    m.tokens_per_s = tokens / (m.step_ms / 1e3);
    m.flops_per_s = flops / (m.step_ms / 1e3);
  }
  if (source) *source = src;
  return m;
}

namespace {

TrialOutcome with(TrialStatus status, std::string reason) {
  TrialOutcome o;
  o.status = status;
  o.reason = std::move(reason);
  return o;
}

// A clean exit with result status "ok": ok when the result measures a step.
TrialOutcome measured(const json& r, const MeasureWindow& window) {
  std::string source;
  Measurement m = measure(r, window, &source);
  if (!(m.step_ms > 0) || !(m.samples_per_s > 0))
    return with(TrialStatus::failed, "result says ok but has no step time");
  TrialOutcome o = with(TrialStatus::ok, source);
  o.measurement = m;
  return o;
}

// No usable result: hybrid-train's exit statuses (0 ok, 2 config, 3 OOM, 4 diverged, 1 other).
TrialOutcome from_exit_code(const ExitInfo& exit, const ResultFile& result) {
  const std::string why = result.problem.empty() ? "no result" : result.problem;
  switch (exit.exit_code) {
    case 3:
      return with(TrialStatus::oom, "exit status 3 (out of memory), " + why);
    case 2:
      return with(TrialStatus::config_error, "exit status 2 (config error), " + why);
    case 4:
      return with(TrialStatus::diverged, "exit status 4 (diverged), " + why);
    default:
      return with(TrialStatus::failed, fmt::format("exit status {}, {}", exit.exit_code, why));
  }
}

// The process's story and the result's status, in order of precedence: an error
// result explains a non-zero exit better than the exit status does.
TrialOutcome from_exit_and_status(const ExitInfo& exit, const ResultFile& result,
                                  const std::string& status, const MeasureWindow& window) {
  const json* r = result.json ? &*result.json : nullptr;
  if (exit.timed_out)
    return with(TrialStatus::timeout,
                fmt::format("no result within the trial timeout of {:g} s; process group killed",
                            exit.timeout_s));
  if (!exit.started)
    return with(TrialStatus::failed, "launcher could not be started: " + exit.start_error);
  if (status == "oom") return with(TrialStatus::oom, error_message(*r));
  if (status == "config_error") return with(TrialStatus::config_error, error_message(*r));
  if (exit.signal != 0)
    return with(TrialStatus::crash,
                fmt::format("the trial process (launcher or rank) was killed by {}",
                            signal_name(exit.signal)));
  if (exit.exit_code > 128 && exit.exit_code <= 128 + 64 && status != "failed")
    return with(TrialStatus::crash, fmt::format("exit status {}: a process died of {}",
                                                exit.exit_code, signal_name(exit.exit_code - 128)));
  if (status == "failed") return with(TrialStatus::failed, error_message(*r));
  // A run that went NaN measured nothing worth keeping: no metric, a status of its own.
  if (status == "diverged") return with(TrialStatus::diverged, error_message(*r));
  if (status == "ok" && exit.exit_code == 0) return measured(*r, window);
  if (status == "ok")
    return with(TrialStatus::failed,
                fmt::format("exit status {} although the result says ok", exit.exit_code));
  if (!status.empty())
    return with(TrialStatus::failed, fmt::format("unknown result status \"{}\" (exit status {})",
                                                 status, exit.exit_code));
  return from_exit_code(exit, result);
}

}  // namespace

TrialOutcome classify_trial(const ExitInfo& exit, const ResultFile& result,
                            const MeasureWindow& window, std::string_view launcher_output) {
  const json* r = result.json ? &*result.json : nullptr;
  const std::string status = r ? base::string_at(*r, "status").value_or("") : std::string();
  TrialOutcome o = from_exit_and_status(exit, result, status, window);
  // What the launcher saw (a lost host, the scheduler's time limit or cancel,
  // the OOM killer) is the cause of whatever the ranks did next (crashed, hung,
  // failed, or left no result: srun exits 0 after a node failure); the trial's
  // own verdicts (ok, oom, config error) stand.
  const bool ended_badly = o.status == TrialStatus::crash || o.status == TrialStatus::failed ||
                           o.status == TrialStatus::timeout;
  if (ended_badly) {
    const LauncherReport report = read_launcher_report(launcher_output);
    auto because = [&](TrialStatus status, const char* what) {
      o = with(status,
               fmt::format("{} (the launcher: \"{}\"); then: {}", what, report.line, o.reason));
    };
    switch (report.verdict) {
      case LauncherVerdict::node_failure:
        because(TrialStatus::node_failure, "a host was lost");
        break;
      case LauncherVerdict::time_limit:
        because(TrialStatus::timeout, "the scheduler's time limit");
        break;
      case LauncherVerdict::cancelled:
        because(TrialStatus::cancelled, "cancelled by the scheduler or its user");
        break;
      case LauncherVerdict::oom:
        because(TrialStatus::oom, "the OOM killer");
        break;
      case LauncherVerdict::none:
        break;
    }
  }
  if (r) {
    if (r->contains("run_id") && (*r)["run_id"].is_number_integer())
      o.run_id = (*r)["run_id"].get<int64_t>();
    if (r->contains("peak_memory_total_bytes") &&
        (*r)["peak_memory_total_bytes"].is_number_unsigned())
      o.peak_mem_bytes = (*r)["peak_memory_total_bytes"].get<uint64_t>();
  }
  return o;
}

}  // namespace hybrid::autotune
