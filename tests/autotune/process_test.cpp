// Trial processes: exit statuses, signals, timeouts that kill the whole process
// group (grandchildren included), exec failures; both output streams in the log.
#include "autotune/process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <thread>

#include "tune_test_util.h"

namespace hybrid::autotune {
namespace {

using ::testing::HasSubstr;

bool alive(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string s;
  std::getline(stat, s);
  const auto close = s.rfind(')');
  return close != std::string::npos && s.size() > close + 2 && s[close + 2] != 'Z';
}

TEST(Process, ExitStatusAndOutput) {
  test::TempDir dir;
  ProcessOptions o;
  o.log_path = dir / "out.log";
  const auto r = run_process({"sh", "-c", "echo hello; echo oops >&2; exit 3"}, o);
  EXPECT_TRUE(r.exit.started);
  EXPECT_EQ(r.exit.exit_code, 3);
  EXPECT_EQ(r.exit.signal, 0);
  EXPECT_FALSE(r.exit.timed_out);
  EXPECT_EQ(test::read_text(o.log_path), "hello\noops\n");
}

TEST(Process, SignalsAreReported) {
  const auto r = run_process({"sh", "-c", "kill -SEGV $$"}, {});
  EXPECT_EQ(r.exit.signal, SIGSEGV);
}

TEST(Process, TimeoutKillsTheWholeGroup) {
  test::TempDir dir;
  ProcessOptions o;
  o.timeout_s = 0.5;
  o.kill_grace_s = 0.5;
  // The child starts a grandchild that ignores SIGTERM and records its pid.
  const std::string pidfile = dir / "grandchild.pid";
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_process(
      {"sh", "-c", "sh -c 'trap \"\" TERM; echo $$ > " + pidfile + "; sleep 300' & wait"}, o);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r.exit.timed_out);
  EXPECT_LT(took, 10.0);
  const pid_t grandchild = std::stoi(test::read_text(pidfile));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(alive(grandchild)) << "the grandchild survived the group kill";
}

TEST(Process, LeftoverGroupMembersAreKilledAfterANormalExit) {
  test::TempDir dir;
  const std::string pidfile = dir / "orphan.pid";
  const auto r = run_process({"sh", "-c", "sleep 300 & echo $! > " + pidfile + "; exit 0"}, {});
  EXPECT_EQ(r.exit.exit_code, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(alive(std::stoi(test::read_text(pidfile))));
}

TEST(Process, ExecFailureIsNotACrash) {
  const auto r = run_process({"/nonexistent/launcher", "x"}, {});
  EXPECT_FALSE(r.exit.started);
  EXPECT_THAT(r.exit.start_error, HasSubstr("No such file"));
}

TEST(Process, CancelStopsTheChild) {
  std::atomic<bool> cancel{false};
  ProcessOptions o;
  o.cancel = &cancel;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel = true;
  });
  const auto r = run_process({"sleep", "300"}, o);
  t.join();
  EXPECT_TRUE(r.cancelled);
  EXPECT_FALSE(r.exit.timed_out);
  EXPECT_LT(r.wall_s, 10.0);
}

}  // namespace
}  // namespace hybrid::autotune
