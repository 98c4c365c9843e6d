// Runs a shell command in a test and captures what it printed (shared by the
// suites that drive the real command-line tools).
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace hybrid::test {

struct CommandResult {
  int exit_code = -1;  // 128 + signal when a signal ended it
  std::string output;  // stdout and stderr
};

inline CommandResult run_command(const std::string& cmd) {
  CommandResult r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), int(buf.size()), p)) r.output += buf.data();
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace hybrid::test
