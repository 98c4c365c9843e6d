// Running a child process without a shell (arguments pass as they are), with
// its output in files, a timeout, cancellation, and — for children that start
// children of their own, such as mpirun — its own session, so that a timeout or
// a cancel kills the whole process group (SIGTERM, then SIGKILL after a grace
// period) and the child gets SIGTERM if this process dies (PR_SET_PDEATHSIG).
#pragma once

#include <atomic>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hybrid::base {

struct SubprocessOptions {
  std::optional<std::filesystem::path> stdout_file;  // unset: /dev/null
  std::optional<std::filesystem::path> stderr_file;  // unset: inherited (see below)
  bool stderr_to_stdout = false;                     // stderr goes where stdout goes
  bool quiet_stderr = false;                         // stderr to /dev/null
  bool append = false;        // append to the output files instead of truncating them
  bool own_session = false;   // setsid + PR_SET_PDEATHSIG; timeouts kill the group
  double timeout_s = 0;       // 0: no limit
  double kill_grace_s = 5.0;  // between SIGTERM and SIGKILL
  std::vector<std::pair<std::string, std::string>> env;  // set in the child over the inherited ones
  const std::atomic<bool>* cancel = nullptr;             // set: kill and return
};

struct SubprocessResult {
  bool started = true;      // false: it could not be started (start_error says why)
  std::string start_error;  // "mpirun: No such file or directory"
  bool exited = false;      // exited normally (exit_code valid)
  int exit_code = -1;
  int signal = 0;  // the signal that ended it, when not exited
  bool timed_out = false;
  bool cancelled = false;
  double wall_s = 0;

  bool ok() const { return started && exited && exit_code == 0; }
  // "exit code 2", "killed by signal 11 (Segmentation fault)", "timed out after 600 s", ...
  std::string describe() const;
};

// argv[0] without a '/' is looked up in PATH. Never throws for the child's sake:
// a command that cannot start returns started = false.
SubprocessResult run_subprocess(const std::vector<std::string>& argv,
                                const SubprocessOptions& options = {});

// The command's standard output with trailing newlines removed, or nullopt when
// it cannot start or fails (for optional facts such as the git revision).
std::optional<std::string> capture_output(const std::vector<std::string>& argv,
                                          double timeout_s = 30);

// The command as a POSIX shell would read it back: words quoted only when they need
// it, single quotes inside a word written '\'' ("a 'b c' 'it'\''s'"). For messages
// and logs that a user may paste into a shell.
std::string shell_join(const std::vector<std::string>& argv);

// The last lines of a file (at most max_bytes of them, whole lines), "" when absent.
std::string read_tail(const std::filesystem::path& path, size_t max_lines = 40,
                      size_t max_bytes = 4096);

}  // namespace hybrid::base
