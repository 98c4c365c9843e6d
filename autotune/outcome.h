// A trial's outcome, classified from what the process returned and the
// structured result JSON that hybrid-train writes (--result) — never from its
// text output (DeepSpeed's autotuner calls a trial failed when any stderr line
// contains "error").
//
//   timeout       the tuner killed the process group at the trial timeout
//   crash         the launcher died of a signal, or exited 128+N (mpirun's way
//                 of saying a rank died of signal N), without an error result
//   oom           result status "oom" (or exit status 3 without a result)
//   config_error  result status "config_error" (or exit status 2 without one)
//   diverged      result status "diverged" (or exit status 4 without a result):
//                 the loss went NaN or infinite; nothing measured
//   failed        anything else that is not a clean success
//   ok            exit status 0 and result status "ok" with measurements
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "autotune/metric.h"
#include "profiler/profile_data.h"
#include "profiler/sweep_data.h"

namespace hybrid::autotune {

struct ExitInfo {
  bool started = true;      // false: the launcher could not be executed
  std::string start_error;  // why (exec's errno)
  int exit_code = 0;        // when signal == 0
  int signal = 0;           // the launcher process died of this signal
  bool timed_out = false;
  double timeout_s = 0;
};

// The result file as read back: its JSON, or why there is none.
struct ResultFile {
  std::optional<nlohmann::json> json;
  std::string problem;  // "no result file", "invalid JSON: ...", "" when json is set
};
ResultFile read_result_file(const std::string& path);

// How the window's step times become one: the median (default, DeepSpeed-like
// and robust to a stray slow step) or the minimum (the config's undisturbed
// speed; steadier when other work shares the machine).
enum class StepStatistic { median, min };
StepStatistic parse_statistic(const std::string& name);  // "median" | "min"; TuneError otherwise
const char* statistic_name(StepStatistic s);

// Which steps the metric covers (1-based, inclusive), and per-step times when
// the run store has them (steps table of the trial's run), in step order.
struct MeasureWindow {
  int start_step = 1;
  int end_step = 0;  // 0: all steps
  std::vector<double> store_step_ms;
  StepStatistic statistic = StepStatistic::median;
};

struct TrialOutcome {
  profiler::TrialStatus status = profiler::TrialStatus::failed;
  std::string reason;
  std::optional<Measurement> measurement;  // ok trials
  std::optional<uint64_t> peak_mem_bytes;  // measured on rank 0 (result JSON)
  std::optional<int64_t> run_id;           // the run the trial wrote to the store
};

// `launcher_output`: what the trial printed (its log's tail), read for the
// launcher's report of how the trial ended (autotune/launcher_report.h).
TrialOutcome classify_trial(const ExitInfo& exit, const ResultFile& result,
                            const MeasureWindow& window, std::string_view launcher_output = {});

// The measurement over the window: the median (or minimum) step time of steps
// start..end taken from result["step_ms"] when hybrid-train writes per-step
// times, else from the run store's steps, else hybrid-train's median over all
// steps; rates are the per-step work (derived from the result) over that time.
// `source` says which was used.
Measurement measure(const nlohmann::json& result, const MeasureWindow& window,
                    std::string* source = nullptr);

std::string signal_name(int sig);  // "SIGSEGV"

}  // namespace hybrid::autotune
