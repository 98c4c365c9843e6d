// Helpers of the viewer tests: a fixture database in a temporary directory, a
// checksum of a file's bytes, and running a command with its output captured.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/gui/view_fixture.h"
#include "tests/profiler/store_test_util.h"

namespace hybrid::gui::test {

using profiler::test::TempDir;

// FNV-1a over the file's bytes: equal before and after means unmodified.
inline uint64_t file_checksum(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  uint64_t h = 1469598103934665603ull;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    for (std::streamsize i = 0; i < in.gcount(); ++i) {
      h ^= uint64_t(static_cast<unsigned char>(buf[i]));
      h *= 1099511628211ull;
    }
  }
  return h;
}

struct CommandResult {
  int status = -1;     // exit status; 128 + signal when killed
  std::string output;  // stdout and stderr together
};

// Runs `cmd` through the shell with stderr merged into stdout.
inline CommandResult run_command(const std::string& cmd) {
  CommandResult r;
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  if (!f) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) r.output.append(buf, n);
  const int st = pclose(f);
  if (WIFEXITED(st))
    r.status = WEXITSTATUS(st);
  else if (WIFSIGNALED(st))
    r.status = 128 + WTERMSIG(st);
  return r;
}

inline bool program_exists(const std::string& name) {
  return run_command("command -v " + name + " >/dev/null").status == 0;
}

// A database with a sweep (four ok trials with profiled runs, an OOM, a timeout,
// two pruned candidates) plus one more run with a GPU stream lane.
struct FixtureDb {
  TempDir dir;
  std::filesystem::path path;
  FixtureSweep sweep;
  FixtureRun gpu_run;
  FixtureDb() : path(dir / "hybrid.db") {
    profiler::RunStore store(path);
    sweep = write_fixture_sweep(store);
    FixtureRunSpec spec;
    spec.name = "gpu lanes";
    spec.gpu_lane = true;
    gpu_run = FixtureWriter(store).write_run(spec);
  }
};

}  // namespace hybrid::gui::test

// Skips the test where a database the tests build (sweep_db.h, imported_db.h)
// could not be built because a tool is not built here; fails it on any other
// error.
#define HYBRID_REQUIRE_BUILT_DB(db)                                                      \
  do {                                                                                   \
    if ((db).path.empty()) {                                                             \
      if ((db).error.find("not built") != std::string::npos) GTEST_SKIP() << (db).error; \
      FAIL() << (db).error;                                                              \
    }                                                                                    \
  } while (0)
