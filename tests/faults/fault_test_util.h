// Helpers of the fault tests (kill storms, resource limits): a process started
// in its own process group with its output in a file, polling with a deadline,
// the storm's seed and kill count, and private mounts (tmpfs, read-only).
#pragma once

#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "autotune/launcher.h"
#include "tests/autotune/tune_test_util.h"

extern char** environ;

namespace hybrid::faults {

// A command (split like a launcher template) started in a process group of its
// own, stdout and stderr appended to `log`.
class Child {
 public:
  Child(const std::string& command, const std::string& log) {
    const auto words = autotune::split_words(command);
    std::vector<char*> argv;
    for (const auto& w : words) argv.push_back(const_cast<char*>(w.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    if (posix_spawn(&pid_, argv[0], &fa, &attr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      ::kill(-pid_, SIGKILL);
      wait();
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  bool running() {
    if (reaped_) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      reaped_ = true;
      status_ = status;
    }
    return !reaped_;
  }
  // SIGKILL to the process alone, or to its whole process group.
  void kill(bool group) { ::kill(group ? -pid_ : pid_, SIGKILL); }
  int wait() {
    if (!reaped_) {
      ::waitpid(pid_, &status_, 0);
      reaped_ = true;
    }
    return status_;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

// Polls `done` every 5 ms until it holds or `seconds` pass; returns whether it held.
inline bool wait_until(const std::function<bool()>& done, double seconds = 60) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

// Makes this process the reaper of every orphan among its descendants
// (PR_SET_CHILD_SUBREAPER): a killed process's children, reparented here
// instead of to init, can then be waited for.
inline bool become_subreaper() { return ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0; }

// Reaps children until none is left; false if some still run after `seconds`.
// After a kill, this waits for the whole tree the killed process started (a
// launcher it had just forked may still write its start line), instead of
// sleeping a guessed while. Call it only with no other child meant to outlive
// it: it reaps whatever child ends.
inline bool reap_every_child(double seconds = 30) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (true) {
    int status = 0;
    const pid_t r = ::waitpid(-1, &status, WNOHANG);
    if (r < 0 && errno == ECHILD) return true;
    if (r > 0) continue;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

inline int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// The tuner's test pauses in the tune storms (HYBRID_TUNE_TEST_PAUSE_S): they
// hold short moments (between two trials, best.json's write) open for a kill.
constexpr double kStormPauseS = 0.2;

// A kill storm's set-up: its kill count (HYBRID_KILL_STORM_KILLS, else
// `default_kills`), seed (HYBRID_KILL_STORM_SEED, else 14) and the random
// numbers drawn from it; this process made the reaper of the killed tuners'
// launchers; cfg.json (the tiny GPT-2) and space.json (`space`) in `dir`; the
// tuner's test pauses of kStormPauseS.
struct Storm {
  int kills = 0;
  unsigned seed = 0;
  bool reaper = false;  // whether this process became the subreaper
  std::mt19937 rng;     // seeded with `seed`
};

inline Storm set_up_storm(const autotune::test::TempDir& dir, int default_kills,
                          const std::string& space) {
  Storm s;
  s.kills = env_int("HYBRID_KILL_STORM_KILLS", default_kills);
  s.seed = unsigned(env_int("HYBRID_KILL_STORM_SEED", 14));
  s.rng.seed(s.seed);
  s.reaper = become_subreaper();
  autotune::test::write_json(dir / "cfg.json", autotune::test::tiny_config());
  autotune::test::write_json(dir / "space.json", nlohmann::json::parse(space));
  ::setenv("HYBRID_TUNE_TEST_PAUSE_S", std::to_string(kStormPauseS).c_str(), 1);
  return s;
}

// A private mount namespace for this test process and its children: mounts
// made here vanish with the process, whatever happens. "" on success, else why
// not (no privilege: the caller skips).
inline std::string enter_private_mounts() {
  if (::unshare(CLONE_NEWNS) != 0) return fmt::format("unshare(CLONE_NEWNS): {}", strerror(errno));
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return fmt::format("mount --make-rprivate /: {}", strerror(errno));
  return "";
}

// A tmpfs of `bytes` at `dir` (existing folder); "" on success, else why not.
inline std::string mount_tmpfs(const std::string& dir, size_t bytes) {
  const std::string opts = fmt::format("size={}", bytes);
  if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, opts.c_str()) != 0)
    return fmt::format("mount -t tmpfs -o {} {}: {}", opts, dir, strerror(errno));
  return "";
}

// Makes the filesystem mounted at `dir` read-only; "" on success, else why not.
inline std::string remount_read_only(const std::string& dir) {
  if (::mount(nullptr, dir.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr) != 0)
    return fmt::format("mount -o remount,ro {}: {}", dir, strerror(errno));
  return "";
}

}  // namespace hybrid::faults
