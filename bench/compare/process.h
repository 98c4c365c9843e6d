// Running a child process (a benchmark executable, mpirun, git) without a shell:
// arguments are passed as they are, so filters with regex characters need no quoting.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hybrid::bench {

struct ProcessOptions {
  std::optional<std::filesystem::path> stdout_file;  // unset: /dev/null
  std::optional<std::filesystem::path> stderr_file;  // unset: inherited (or /dev/null if quiet)
  bool quiet_stderr = false;                         // true: stderr to /dev/null
  double timeout_s = 0;                              // 0: no limit
  std::vector<std::pair<std::string, std::string>> env;  // set in the child, over the inherited ones
};

struct ProcessResult {
  int exit_code = -1;     // valid when exited
  bool exited = false;    // false: killed by a signal (see signal) or timed out
  int signal = 0;
  bool timed_out = false;
  double wall_s = 0;

  bool ok() const { return exited && exit_code == 0; }
  std::string describe() const;  // "exit code 2", "killed by signal 11", "timed out after 600 s"
};

// argv[0] without a '/' is looked up in PATH. Throws std::runtime_error naming the
// program when it cannot be started at all (not found, not executable).
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// Runs a command and returns its standard output with trailing newlines removed,
// or nullopt when it cannot be started or fails (for optional facts such as the git revision).
std::optional<std::string> capture_output(const std::vector<std::string>& argv);

}  // namespace hybrid::bench
