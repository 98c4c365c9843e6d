// Runs one trial command as a child process in its own session (setsid), with
// its output in a log file and a timeout after which the whole process group
// is killed (SIGTERM, then SIGKILL after a grace period), so neither a hung
// rank nor a launcher's leftover children can stall the sweep. The child also
// gets SIGTERM if the tuner dies (PR_SET_PDEATHSIG), so a killed tuner leaves
// no trial behind.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "autotune/outcome.h"

namespace hybrid::autotune {

struct ProcessOptions {
  double timeout_s = 0;        // 0: none
  double kill_grace_s = 3.0;   // between SIGTERM and SIGKILL
  std::string log_path;        // stdout and stderr (appended); empty: /dev/null
  const std::atomic<bool>* cancel = nullptr;  // set: kill the group and return
};

struct ProcessResult {
  ExitInfo exit;
  double wall_s = 0;
  bool cancelled = false;
};

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& opts);

// The last lines of a file (at most max_bytes of them, whole lines), "" when absent.
std::string read_tail(const std::string& path, size_t max_lines = 40, size_t max_bytes = 4096);

}  // namespace hybrid::autotune
