#include "autotune/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include <fmt/format.h>

namespace hybrid::autotune {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Waits up to `limit_s` for the child; true once it has been reaped.
bool wait_for(pid_t pid, int& status, double limit_s) {
  const auto t0 = Clock::now();
  while (true) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return true;  // not our child any more: nothing to wait for
    if (limit_s >= 0 && seconds_since(t0) >= limit_s) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void kill_group(pid_t pgid, int sig) {
  if (::kill(-pgid, sig) != 0 && errno == ESRCH) return;
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& opts) {
  ProcessResult res;
  if (argv.empty()) {
    res.exit.started = false;
    res.exit.start_error = "empty command";
    return res;
  }
  // A close-on-exec pipe tells the parent whether exec succeeded.
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) {
    res.exit.started = false;
    res.exit.start_error = fmt::format("pipe: {}", std::strerror(errno));
    return res;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  const auto t0 = Clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    res.exit.started = false;
    res.exit.start_error = fmt::format("fork: {}", std::strerror(errno));
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    return res;
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    ::setsid();
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);  // the tuner died before prctl took effect
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = opts.log_path.empty() ? ::open("/dev/null", O_WRONLY)
                                          : ::open(opts.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in >= 0) ::dup2(in, 0);
    if (out >= 0) {
      ::dup2(out, 1);
      ::dup2(out, 2);
    }
    ::execvp(args[0], args.data());
    const int err = errno;
    [[maybe_unused]] auto n = ::write(pipefd[1], &err, sizeof err);
    ::_exit(127);
  }
  ::close(pipefd[1]);
  int child_errno = 0;
  ssize_t got;
  do {
    got = ::read(pipefd[0], &child_errno, sizeof child_errno);
  } while (got < 0 && errno == EINTR);
  ::close(pipefd[0]);
  int status = 0;
  if (got == sizeof child_errno) {
    wait_for(pid, status, -1);
    res.exit.started = false;
    res.exit.start_error = fmt::format("{}: {}", argv[0], std::strerror(child_errno));
    res.wall_s = seconds_since(t0);
    return res;
  }

  bool reaped = false;
  while (!reaped) {
    reaped = wait_for(pid, status, 0.2);
    if (reaped) break;
    const bool cancel = opts.cancel && opts.cancel->load();
    const bool late = opts.timeout_s > 0 && seconds_since(t0) >= opts.timeout_s;
    if (cancel || late) {
      res.exit.timed_out = late && !cancel;
      res.cancelled = cancel;
      kill_group(pid, SIGTERM);
      if (!wait_for(pid, status, opts.kill_grace_s)) {
        kill_group(pid, SIGKILL);
        wait_for(pid, status, -1);
      }
      reaped = true;
    }
  }
  // Whatever the launcher left in its group (ranks it did not reap) goes too.
  kill_group(pid, SIGKILL);
  res.wall_s = seconds_since(t0);
  res.exit.timeout_s = opts.timeout_s;
  if (WIFEXITED(status)) res.exit.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) res.exit.signal = WTERMSIG(status);
  return res;
}

std::string read_tail(const std::string& path, size_t max_lines, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  const std::streamoff from = size > std::streamoff(max_bytes) ? size - std::streamoff(max_bytes) : 0;
  in.seekg(from);
  std::string text(size_t(size - from), '\0');
  in.read(text.data(), std::streamsize(text.size()));
  if (from > 0) {  // drop the partial first line
    const size_t nl = text.find('\n');
    text = nl == std::string::npos ? text : text.substr(nl + 1);
  }
  size_t lines = 0, pos = text.size();
  if (!text.empty() && text.back() == '\n') --pos;
  while (pos > 0) {
    const size_t nl = text.rfind('\n', pos - 1);
    if (nl == std::string::npos) break;
    if (++lines >= max_lines) return text.substr(nl + 1);
    pos = nl;
  }
  return text;
}

}  // namespace hybrid::autotune
