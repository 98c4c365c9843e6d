#include "bench/compare/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

namespace hybrid::bench {

namespace {

// Child side: redirect, exec, and on failure report errno through the pipe.
[[noreturn]] void exec_child(const std::vector<std::string>& argv, const ProcessOptions& options,
                             int error_fd) {
  auto redirect = [](const char* path, int target, int flags) {
    int fd = ::open(path, flags, 0644);
    if (fd < 0) return false;
    ::dup2(fd, target);
    ::close(fd);
    return true;
  };
  const std::string out = options.stdout_file ? options.stdout_file->string() : "/dev/null";
  bool ok = redirect(out.c_str(), STDOUT_FILENO, O_WRONLY | O_CREAT | O_TRUNC);
  if (ok && options.stderr_file) {
    ok = redirect(options.stderr_file->c_str(), STDERR_FILENO, O_WRONLY | O_CREAT | O_TRUNC);
  } else if (ok && options.quiet_stderr) {
    ok = redirect("/dev/null", STDERR_FILENO, O_WRONLY);
  }
  for (const auto& [name, value] : options.env) {
    if (ok) ok = ::setenv(name.c_str(), value.c_str(), 1) == 0;
  }
  if (ok) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
  }
  int err = errno;
  [[maybe_unused]] auto n = ::write(error_fd, &err, sizeof err);
  ::_exit(127);
}

}  // namespace

std::string ProcessResult::describe() const {
  if (timed_out) return fmt::format("timed out after {:.0f} s", wall_s);
  if (!exited) return fmt::format("killed by signal {} ({})", signal, ::strsignal(signal));
  return fmt::format("exit code {}", exit_code);
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  if (argv.empty()) throw std::invalid_argument("run_process: empty command");
  int error_pipe[2];
  if (::pipe2(error_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error(fmt::format("{}: cannot create a pipe: {}", argv[0], std::strerror(errno)));
  }
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(error_pipe[0]);
    ::close(error_pipe[1]);
    throw std::runtime_error(fmt::format("{}: cannot fork: {}", argv[0], std::strerror(errno)));
  }
  if (pid == 0) {
    ::close(error_pipe[0]);
    exec_child(argv, options, error_pipe[1]);
  }
  ::close(error_pipe[1]);
  int child_errno = 0;
  // The pipe closes on a successful exec (CLOEXEC), so this read returns 0 then.
  ssize_t got = ::read(error_pipe[0], &child_errno, sizeof child_errno);
  ::close(error_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof child_errno)) {
    ::waitpid(pid, nullptr, 0);
    throw std::runtime_error(fmt::format("{}: cannot be started: {}", argv[0], std::strerror(child_errno)));
  }

  ProcessResult result;
  int status = 0;
  bool term_sent = false;
  std::chrono::steady_clock::time_point term_time;
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      throw std::runtime_error(fmt::format("{}: waitpid failed: {}", argv[0], std::strerror(errno)));
    }
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - start).count();
    if (options.timeout_s > 0 && elapsed > options.timeout_s) {
      result.timed_out = true;
      if (!term_sent) {
        ::kill(pid, SIGTERM);  // mpirun forwards it to its ranks
        term_sent = true;
        term_time = now;
      } else if (now - term_time > std::chrono::seconds(5)) {
        ::kill(pid, SIGKILL);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) {
    result.exited = true;
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

std::optional<std::string> capture_output(const std::vector<std::string>& argv) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec) /
                       fmt::format("hybrid-bench-capture-{}-{}", ::getpid(),
                                   std::chrono::steady_clock::now().time_since_epoch().count());
  std::optional<std::string> out;
  try {
    ProcessResult r =
        run_process(argv, {.stdout_file = tmp, .stderr_file = {}, .quiet_stderr = true, .timeout_s = 30, .env = {}});
    if (r.ok()) {
      std::ifstream in(tmp);
      std::stringstream ss;
      ss << in.rdbuf();
      std::string s = ss.str();
      while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
      out = s;
    }
  } catch (const std::exception&) {
    out.reset();
  }
  fs::remove(tmp, ec);
  return out;
}

}  // namespace hybrid::bench
