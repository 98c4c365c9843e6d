// The text names of run, sweep and trial statuses and of generation kinds (as
// stored), both ways.
#include <fmt/format.h>

#include <array>
#include <stdexcept>
#include <string>

#include "profiler/generation_data.h"
#include "profiler/profile_data.h"
#include "profiler/sweep_data.h"

namespace hybrid::profiler {

namespace {

constexpr std::array<std::string_view, 7> kRunStatus = {"running",      "ok",     "failed",  "oom",
                                                        "config_error", "killed", "diverged"};
constexpr std::array<std::string_view, 4> kSweepStatus = {"running", "done", "failed", "stopped"};
constexpr std::array<std::string_view, 11> kTrialStatus = {
    "pending",      "running", "ok",           "oom",       "timeout", "crash",
    "config_error", "failed",  "node_failure", "cancelled", "diverged"};
constexpr std::array<std::string_view, 3> kGenerationKind = {"generate", "bench", "rollout"};

template <class Enum, size_t N>
Enum parse(const std::array<std::string_view, N>& names, std::string_view s, const char* what) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == s) return Enum(i);
  std::string allowed;
  for (auto n : names) {
    if (!allowed.empty()) allowed += '|';
    allowed += n;
  }
  throw std::invalid_argument(fmt::format("{} must be {}, got '{}'", what, allowed, s));
}

}  // namespace

std::string_view to_string(RunStatus s) { return kRunStatus.at(size_t(s)); }
std::string_view to_string(SweepStatus s) { return kSweepStatus.at(size_t(s)); }
std::string_view to_string(TrialStatus s) { return kTrialStatus.at(size_t(s)); }
std::string_view to_string(GenerationKind k) { return kGenerationKind.at(size_t(k)); }

RunStatus parse_run_status(std::string_view s) {
  return parse<RunStatus>(kRunStatus, s, "run status");
}
SweepStatus parse_sweep_status(std::string_view s) {
  return parse<SweepStatus>(kSweepStatus, s, "sweep status");
}
TrialStatus parse_trial_status(std::string_view s) {
  return parse<TrialStatus>(kTrialStatus, s, "trial status");
}
GenerationKind parse_generation_kind(std::string_view s) {
  return parse<GenerationKind>(kGenerationKind, s, "generation kind");
}

}  // namespace hybrid::profiler
