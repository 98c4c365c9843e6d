// Resume: hybrid-tune killed with SIGKILL in the middle of a sweep, then run
// again with the same command, runs only the trials that had not finished
// (the one in flight again), and marks the killed trial's run as failed.
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "autotune/launcher.h"
#include "profiler/store/run_store.h"
#include "tune_test_util.h"

extern char** environ;

namespace hybrid::autotune {
namespace {

using profiler::TrialStatus;

std::map<std::string, int> start_counts(const std::string& log) {
  std::map<std::string, int> m;
  std::istringstream in(test::read_text(log));
  for (std::string line; std::getline(in, line);) ++m[line];
  return m;
}

bool terminal(TrialStatus s) { return s != TrialStatus::running && s != TrialStatus::pending; }

TEST(Resume, AKilledSweepRunsOnlyItsUnfinishedTrialsAgain) {
  test::TempDir dir;
  test::write_json(dir / "cfg.json", test::tiny_config());
  test::write_json(dir / "space.json",
                   nlohmann::json::parse(R"({"mbs": [1, 2, 4], "stage": [0, 1]})"));
  const std::string db = dir / "tune.db", log = dir / "starts.log";
  const std::string args = fmt::format(
      "{} --config {} --space {} --strategy grid --early-stop 0 --steps 3 --start-step 2 "
      "--no-probe --db {} --out {} --remeasure 0 --confirm-rounds 0 "
      "--launcher 'bash {}/log_launcher.sh {} {{key}} {{cmd}}'",
      test::tune_bin(), dir / "cfg.json", dir / "space.json", db, dir / "best.json",
      test::data_dir(), log);

  // Launcher starts are counted per key: no re-measurement or confirmation runs (noise.h),
  // which would start a finished key again by design.
  // First run, in the background; killed once two trials have finished.
  const auto argv_words = split_words(args);
  std::vector<char*> argv;
  for (const auto& w : argv_words) argv.push_back(const_cast<char*>(w.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, (dir / "first.log").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  size_t finished = 0;
  while (finished < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!std::filesystem::exists(db)) continue;
    try {
      profiler::RunStore store(db, profiler::OpenMode::read_only);
      finished = 0;
      for (const auto& s : store.sweeps())
        for (const auto& t : store.trials(s.id)) finished += terminal(t.status);
    } catch (const std::exception&) {
      // The tuner may still be creating the file.
    }
  }
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << test::read_text(dir / "first.log");
  ASSERT_GE(finished, 2u) << test::read_text(dir / "first.log");

  // What the killed tuner left: finished trials, and at most one in flight.
  std::set<std::string> done_before, unfinished_before;
  std::vector<int64_t> runs_before;
  {
    profiler::RunStore store(db, profiler::OpenMode::read_only);
    ASSERT_EQ(store.sweeps().size(), 1u);
    for (const auto& t : store.trials(store.sweeps()[0].id))
      (terminal(t.status) ? done_before : unfinished_before).insert(t.key);
    EXPECT_LE(unfinished_before.size(), 1u);
    // The in-flight trial's process dies with its tuner (SIGTERM on parent death).
    for (int i = 0; i < 250; ++i) {
      bool any_alive = false;
      for (const auto& run : store.list_runs())
        if (run.status == profiler::RunStatus::running && ::kill(pid_t(run.writer_pid), 0) == 0)
          any_alive = true;
      if (!any_alive) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (const auto& run : store.list_runs())
      if (run.status == profiler::RunStatus::running) runs_before.push_back(run.id);
  }
  const auto starts_before = start_counts(log);

  // Second run: the same command, to the end.
  const auto r = test::run_command(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output,
              ::testing::HasSubstr(fmt::format("{} trial(s) finished", done_before.size())));
  const auto starts = start_counts(log);
  profiler::RunStore store(db, profiler::OpenMode::read_only);
  ASSERT_EQ(store.sweeps().size(), 1u) << "the second run must resume the sweep, not start another";
  const auto trials = store.trials(store.sweeps()[0].id);
  ASSERT_EQ(trials.size(), 6u);
  for (const auto& t : trials) {
    EXPECT_EQ(t.status, TrialStatus::ok) << t.key << ": " << t.reason;
    const int before = starts_before.count(t.key) ? starts_before.at(t.key) : 0;
    const int after = starts.at(t.key);
    if (done_before.count(t.key))
      EXPECT_EQ(after, before) << t.key << " had finished and was run again";
    else
      EXPECT_EQ(after, before + 1) << t.key << " was not finished and must run exactly once more";
  }
  // The killed trial's run no longer claims to be running.
  for (int64_t id : runs_before)
    EXPECT_EQ(store.get_run(id).status, profiler::RunStatus::failed) << "run " << id;
}

}  // namespace
}  // namespace hybrid::autotune
