// Runs one trial command (a launcher such as mpirun and its ranks) through
// base::run_subprocess in its own session: stdout and stderr appended to the
// trial's log, a timeout and a cancel that kill the whole process group, and
// SIGTERM to the group if the tuner dies, so neither a hung rank nor a
// launcher's leftover children can stall or outlive the sweep. What it adds to
// base is the translation into ExitInfo, which classify_trial reads.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "autotune/outcome.h"

namespace hybrid::autotune {

struct ProcessOptions {
  double timeout_s = 0;                       // 0: none
  double kill_grace_s = 3.0;                  // between SIGTERM and SIGKILL
  std::string log_path;                       // stdout and stderr (appended); empty: /dev/null
  const std::atomic<bool>* cancel = nullptr;  // set: kill the group and return
};

struct ProcessResult {
  ExitInfo exit;
  double wall_s = 0;
  bool cancelled = false;
};

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& opts);

}  // namespace hybrid::autotune
