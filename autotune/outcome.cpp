#include "autotune/outcome.h"

#include "autotune/tune_error.h"

#include <algorithm>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double number_or(const json& j, const char* key, double fallback) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

std::string error_message(const json& r) {
  if (r.contains("error") && r["error"].is_object()) {
    const json& e = r["error"];
    const std::string kind = e.contains("kind") && e["kind"].is_string() ? e["kind"].get<std::string>() : "";
    const std::string msg = e.contains("message") && e["message"].is_string() ? e["message"].get<std::string>() : "";
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
  const double flops = number_or(r, "flops_per_step", number_or(r, "achieved_flops_per_s", 0.0) * per_s);

  std::vector<double> win;
  std::string src;
  if (r.contains("step_ms") && r["step_ms"].is_array()) {
    std::vector<double> steps;
    for (const auto& v : r["step_ms"])
      if (v.is_number()) steps.push_back(v.get<double>());
    win = window_of(steps, w);
    if (!win.empty())
      src = fmt::format("{} of steps {}..{} (result step_ms)", statistic_name(w.statistic), w.start_step,
                        w.start_step + int(win.size()) - 1);
  }
  if (win.empty()) {
    win = window_of(w.store_step_ms, w);
    if (!win.empty())
      src = fmt::format("{} of steps {}..{} (run store)", statistic_name(w.statistic), w.start_step,
                        w.start_step + int(win.size()) - 1);
  }
  Measurement m;
  m.step_ms = win.empty()                              ? all_median_ms
              : w.statistic == StepStatistic::min ? *std::min_element(win.begin(), win.end())
                                                  : median(win);
  if (win.empty()) src = "median over all steps (hybrid-train)";
  if (m.step_ms > 0) {
    m.samples_per_s = samples / (m.step_ms / 1e3);
    m.tokens_per_s = tokens / (m.step_ms / 1e3);
    m.flops_per_s = flops / (m.step_ms / 1e3);
  }
  if (source) *source = src;
  return m;
}

TrialOutcome classify_trial(const ExitInfo& exit, const ResultFile& result, const MeasureWindow& window) {
  TrialOutcome o;
  const json* r = result.json ? &*result.json : nullptr;
  if (r) {
    if (r->contains("run_id") && (*r)["run_id"].is_number_integer()) o.run_id = (*r)["run_id"].get<int64_t>();
    if (r->contains("peak_memory_total_bytes") && (*r)["peak_memory_total_bytes"].is_number_unsigned())
      o.peak_mem_bytes = (*r)["peak_memory_total_bytes"].get<uint64_t>();
  }
  const std::string status = r && r->contains("status") && (*r)["status"].is_string()
                                 ? (*r)["status"].get<std::string>()
                                 : std::string();

  if (exit.timed_out) {
    o.status = TrialStatus::timeout;
    o.reason = fmt::format("no result within the trial timeout of {:g} s; process group killed", exit.timeout_s);
    return o;
  }
  if (!exit.started) {
    o.status = TrialStatus::failed;
    o.reason = "launcher could not be started: " + exit.start_error;
    return o;
  }
  // An error result explains a non-zero exit better than the exit status does.
  if (status == "oom") {
    o.status = TrialStatus::oom;
    o.reason = error_message(*r);
    return o;
  }
  if (status == "config_error") {
    o.status = TrialStatus::config_error;
    o.reason = error_message(*r);
    return o;
  }
  if (exit.signal != 0) {
    o.status = TrialStatus::crash;
    o.reason = fmt::format("the trial process (launcher or rank) was killed by {}", signal_name(exit.signal));
    return o;
  }
  if (exit.exit_code > 128 && exit.exit_code <= 128 + 64 && status != "failed") {
    o.status = TrialStatus::crash;
    o.reason = fmt::format("exit status {}: a process died of {}", exit.exit_code, signal_name(exit.exit_code - 128));
    return o;
  }
  if (status == "failed") {
    o.status = TrialStatus::failed;
    o.reason = error_message(*r);
    return o;
  }
  if (status == "ok" && exit.exit_code == 0) {
    std::string source;
    Measurement m = measure(*r, window, &source);
    if (!(m.step_ms > 0) || !(m.samples_per_s > 0)) {
      o.status = TrialStatus::failed;
      o.reason = "result says ok but has no step time";
      return o;
    }
    o.status = TrialStatus::ok;
    o.measurement = m;
    o.reason = source;
    return o;
  }
  if (status == "ok") {
    o.status = TrialStatus::failed;
    o.reason = fmt::format("exit status {} although the result says ok", exit.exit_code);
    return o;
  }
  if (!status.empty()) {
    o.status = TrialStatus::failed;
    o.reason = fmt::format("unknown result status \"{}\" (exit status {})", status, exit.exit_code);
    return o;
  }
  // No usable result: hybrid-train's exit statuses (0 ok, 2 config, 3 OOM, 1 other).
  const std::string why = result.problem.empty() ? "no result" : result.problem;
  switch (exit.exit_code) {
    case 3:
      o.status = TrialStatus::oom;
      o.reason = "exit status 3 (out of memory), " + why;
      break;
    case 2:
      o.status = TrialStatus::config_error;
      o.reason = "exit status 2 (config error), " + why;
      break;
    default:
      o.status = TrialStatus::failed;
      o.reason = fmt::format("exit status {}, {}", exit.exit_code, why);
  }
  return o;
}

}  // namespace hybrid::autotune
