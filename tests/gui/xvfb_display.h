// One Xvfb server per test process, for the tests that run the real viewer.
//
// xvfb-run is not used: its exit status is its own (a failure to clean up its
// temporary directory turns a viewer's 2 into a 5), and with -a two runs
// starting at once can pick the same display number. Here Xvfb's own lock
// decides who gets a number (a taken one fails at once and the next is tried;
// -displayfd says when it is ready), the viewer's command gets DISPLAY in
// front, and what the test reads is the viewer's own status.
// The server lives until the process exits; ctest -j runs each test in a
// process of its own, so parallel tests never share or race for a display.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace hybrid::gui::test {

class XvfbDisplay {
 public:
  XvfbDisplay() {
    // Display numbers from 200 up: Open MPI's hwloc probes displays :0 to :9
    // for GPUs, and a rank connected to one of ours dies with it ("X connection
    // broken") when the test that owns it ends. Xvfb's lock file makes a taken
    // number fail at once; the next is tried.
    for (int attempt = 0; attempt < 64 && display_.empty(); ++attempt)
      start(200 + int((unsigned(getpid()) + 97u * unsigned(attempt)) % 3800u));
  }
  ~XvfbDisplay() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  XvfbDisplay(const XvfbDisplay&) = delete;
  XvfbDisplay& operator=(const XvfbDisplay&) = delete;

  bool ok() const { return !display_.empty(); }
  // "DISPLAY=:N " to put in front of a shell command.
  std::string env_prefix() const { return "DISPLAY=" + display_ + " "; }

 private:
  // Starts Xvfb on :number; display_ is set once it accepts clients.
  void start(int number) {
    int fds[2];
    if (pipe(fds) != 0) return;
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      const int devnull = open("/dev/null", O_WRONLY);
      dup2(devnull, STDOUT_FILENO);
      dup2(devnull, STDERR_FILENO);
      const std::string display = ":" + std::to_string(number), fd = std::to_string(fds[1]);
      execlp("Xvfb", "Xvfb", display.c_str(), "-displayfd", fd.c_str(), "-screen", "0",
             "1280x800x24", "-nolisten", "tcp", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[1]);
    // Xvfb writes the display number and a newline once it accepts clients;
    // end of file first means it could not start (the number was taken).
    char c;
    std::string written;
    while (read(fds[0], &c, 1) == 1 && c != '\n') written += c;
    close(fds[0]);
    if (pid < 0) return;
    if (written.empty()) {
      waitpid(pid, nullptr, 0);
      return;
    }
    pid_ = pid;
    display_ = ":" + written;
  }

  pid_t pid_ = -1;
  std::string display_;
};

inline bool xvfb_installed() { return std::system("command -v Xvfb >/dev/null 2>&1") == 0; }

// This process's server, started on first use.
inline const XvfbDisplay& xvfb_display() {
  static const XvfbDisplay display;
  return display;
}

}  // namespace hybrid::gui::test
