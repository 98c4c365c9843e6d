// Whether a process is gone, checked by pid under a polling deadline (shared by
// the tests of process-group kills): a killed process dies when the kernel gets
// to it, so a test waits for the death instead of sleeping a guessed while.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace hybrid::test {

// Running or sleeping: it exists and is not a zombie (a killed orphan stays a
// zombie until init reaps it, and a zombie runs nothing).
inline bool process_alive(pid_t pid) {
  if (pid <= 0 || ::kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string s;
  std::getline(stat, s);
  const auto close = s.rfind(')');  // pid (comm) state ...; comm may hold ')'
  return close != std::string::npos && s.size() > close + 2 && s[close + 2] != 'Z';
}

// Polls until `pid` is gone; false if it is still alive after `deadline_s`. The
// deadline only bounds a failing test: a passing one returns as soon as it dies.
inline bool gone_within(pid_t pid, double deadline_s = 10.0) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_s);
  while (process_alive(pid)) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// The pid a process wrote to `pidfile` ("1234\n"), 0 while it has written none.
inline pid_t read_pid(const std::filesystem::path& pidfile) {
  std::ifstream in(pidfile);
  long pid = 0;
  return in >> pid && pid > 0 ? pid_t(pid) : 0;
}

// Kills a survivor of a failed test, so that no test leaves a process behind.
inline void kill_survivor(pid_t pid) {
  if (process_alive(pid)) ::kill(pid, SIGKILL);
}

}  // namespace hybrid::test
