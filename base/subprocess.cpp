#include "base/subprocess.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace hybrid::base {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Child side, between fork and exec: only async-signal-safe calls (the strings
// were prepared by the parent). Reports errno through the pipe on failure.
struct ChildPlan {
  std::vector<char*> argv;
  std::string out, err;  // paths; err empty: inherit
  int flags = 0;
  bool err_to_out = false, own_session = false;
  pid_t parent = 0;
};

[[noreturn]] void exec_child(const ChildPlan& plan, const SubprocessOptions& options,
                             int error_fd) {
  if (plan.own_session) {
    ::setsid();
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != plan.parent) ::_exit(127);  // the parent died before prctl took effect
  }
  auto redirect = [](const char* path, int target, int flags) {
    const int fd = ::open(path, flags, 0644);
    if (fd < 0) return false;
    ::dup2(fd, target);
    ::close(fd);
    return true;
  };
  bool ok = redirect("/dev/null", STDIN_FILENO, O_RDONLY);
  if (ok) ok = redirect(plan.out.c_str(), STDOUT_FILENO, plan.flags);
  if (ok && plan.err_to_out)
    ok = ::dup2(STDOUT_FILENO, STDERR_FILENO) >= 0;
  else if (ok && !plan.err.empty())
    ok = redirect(plan.err.c_str(), STDERR_FILENO, plan.flags);
  for (const auto& [name, value] : options.env)
    if (ok) ok = ::setenv(name.c_str(), value.c_str(), 1) == 0;
  if (ok) ::execvp(plan.argv[0], plan.argv.data());
  const int err = errno;
  [[maybe_unused]] auto n = ::write(error_fd, &err, sizeof err);
  ::_exit(127);
}

// Waits up to `limit_s` (forever when < 0) for the child; true once reaped.
bool wait_for(pid_t pid, int& status, double limit_s) {
  const auto t0 = Clock::now();
  while (true) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return true;  // not our child any more
    if (limit_s >= 0 && seconds_since(t0) >= limit_s) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void signal_child(pid_t pid, bool group, int sig) { ::kill(group ? -pid : pid, sig); }

// Every process of session `sid` (Linux /proc). mpirun puts each rank, and the
// agent that starts a remote daemon, in a process group of its own, so a
// launcher killed by group can leave them behind; none of them leave the session.
void kill_session(pid_t sid) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text;
    std::getline(stat, text);
    // pid (comm) state ppid pgrp session ...; comm may hold spaces and ')'.
    const size_t close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 1));
    std::string state;
    long ppid = 0, pgrp = 0, session = 0;
    if (rest >> state >> ppid >> pgrp >> session && session == sid)
      ::kill(pid_t(std::stol(name)), SIGKILL);
  }
}

ChildPlan plan_for(const std::vector<std::string>& argv, const SubprocessOptions& o) {
  ChildPlan p;
  for (const auto& a : argv) p.argv.push_back(const_cast<char*>(a.c_str()));
  p.argv.push_back(nullptr);
  p.out = o.stdout_file ? o.stdout_file->string() : "/dev/null";
  p.err = o.stderr_file ? o.stderr_file->string() : (o.quiet_stderr ? "/dev/null" : "");
  p.err_to_out = o.stderr_to_stdout;
  p.flags = O_WRONLY | O_CREAT | (o.append ? O_APPEND : O_TRUNC);
  p.own_session = o.own_session;
  p.parent = ::getpid();
  return p;
}

}  // namespace

std::string SubprocessResult::describe() const {
  if (!started) return "could not start: " + start_error;
  if (cancelled) return "cancelled";
  if (timed_out) return fmt::format("timed out after {:.0f} s", wall_s);
  if (!exited) return fmt::format("killed by signal {} ({})", signal, ::strsignal(signal));
  return fmt::format("exit code {}", exit_code);
}

SubprocessResult run_subprocess(const std::vector<std::string>& argv, const SubprocessOptions& o) {
  SubprocessResult res;
  auto not_started = [&](std::string why) {
    res.started = false;
    res.start_error = std::move(why);
    return res;
  };
  if (argv.empty()) return not_started("empty command");
  int pipefd[2];  // close-on-exec: tells the parent whether exec succeeded
  if (::pipe2(pipefd, O_CLOEXEC) != 0)
    return not_started(fmt::format("pipe: {}", std::strerror(errno)));
  const ChildPlan plan = plan_for(argv, o);
  const auto t0 = Clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    return not_started(fmt::format("fork: {}", std::strerror(errno)));
  }
  if (pid == 0) exec_child(plan, o, pipefd[1]);
  ::close(pipefd[1]);
  int child_errno = 0;
  ssize_t got;
  do {
    got = ::read(pipefd[0], &child_errno, sizeof child_errno);
  } while (got < 0 && errno == EINTR);
  ::close(pipefd[0]);
  int status = 0;
  if (got == ssize_t(sizeof child_errno)) {
    wait_for(pid, status, -1);
    res.wall_s = seconds_since(t0);
    return not_started(fmt::format("{}: {}", argv[0], std::strerror(child_errno)));
  }
  while (!wait_for(pid, status, 0.1)) {
    const bool cancel = o.cancel && o.cancel->load();
    const bool late = o.timeout_s > 0 && seconds_since(t0) >= o.timeout_s;
    if (!cancel && !late) continue;
    res.cancelled = cancel;
    res.timed_out = late && !cancel;
    signal_child(pid, o.own_session, SIGTERM);  // mpirun forwards it to its ranks
    if (!wait_for(pid, status, o.kill_grace_s)) {
      signal_child(pid, o.own_session, SIGKILL);
      wait_for(pid, status, -1);
    }
    break;
  }
  // Whatever a launcher left in its session (ranks it did not reap) goes too.
  if (o.own_session) kill_session(pid);
  res.wall_s = seconds_since(t0);
  if (WIFEXITED(status)) {
    res.exited = true;
    res.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    res.signal = WTERMSIG(status);
  }
  return res;
}

std::optional<std::string> capture_output(const std::vector<std::string>& argv, double timeout_s) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path tmp =
      fs::temp_directory_path(ec) /
      fmt::format("hybrid-capture-{}-{}", ::getpid(), Clock::now().time_since_epoch().count());
  SubprocessOptions o;
  o.stdout_file = tmp;
  o.quiet_stderr = true;
  o.timeout_s = timeout_s;
  std::optional<std::string> out;
  if (run_subprocess(argv, o).ok()) {
    std::ifstream in(tmp);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string s = ss.str();
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    out = std::move(s);
  }
  fs::remove(tmp, ec);
  return out;
}

std::string read_tail(const std::filesystem::path& path, size_t max_lines, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  const std::streamoff from =
      size > std::streamoff(max_bytes) ? size - std::streamoff(max_bytes) : 0;
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

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& word : argv) {
    if (!out.empty()) out.push_back(' ');
    const bool plain = !word.empty() && word.find_first_not_of(
                                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789@%+=:,./_-") == std::string::npos;
    if (plain) {
      out += word;
      continue;
    }
    out.push_back('\'');
    for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out.push_back('\'');
  }
  return out;
}

}  // namespace hybrid::base
