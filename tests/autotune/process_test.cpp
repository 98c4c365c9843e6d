// Trial processes: exit statuses, signals, timeouts that kill the whole process
// group (grandchildren included), exec failures; both output streams in the log.
#include "autotune/process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "tests/common/process_gone.h"
#include "tune_test_util.h"

namespace hybrid::autotune {
namespace {

using ::testing::HasSubstr;

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
  o.kill_grace_s = 0.5;
  // The child starts a grandchild that ignores SIGTERM, then records its pid and
  // becomes the sleeper (exec), so that a survivor is the process the test kills.
  const std::string pidfile = dir / "grandchild.pid";
  const std::string script =
      "sh -c 'trap \"\" TERM; echo $$ > " + pidfile + "; exec sleep 300' & wait";
  ProcessResult r;
  pid_t grandchild = 0;
  // The timeout doubles until the grandchild wrote its pid before it struck: on a
  // loaded machine a short one can strike before the grandchild has started.
  for (o.timeout_s = 0.5; grandchild == 0 && o.timeout_s <= 16; o.timeout_s *= 2) {
    std::filesystem::remove(pidfile);
    r = run_process({"sh", "-c", script}, o);
    grandchild = hybrid::test::read_pid(pidfile);
  }
  ASSERT_NE(grandchild, 0) << "the grandchild never started";
  EXPECT_TRUE(r.exit.timed_out);
  EXPECT_NE(r.exit.signal, 0);  // killed, not waited for: its own end was 300 s away
  // Its death by pid under a deadline: the kill is sent before run_process
  // returns, but the kernel ends the process in its own time.
  EXPECT_TRUE(hybrid::test::gone_within(grandchild)) << "the grandchild survived the group kill";
  hybrid::test::kill_survivor(grandchild);
}

TEST(Process, LeftoverGroupMembersAreKilledAfterANormalExit) {
  test::TempDir dir;
  const std::string pidfile = dir / "orphan.pid";
  const auto r = run_process({"sh", "-c", "sleep 300 & echo $! > " + pidfile + "; exit 0"}, {});
  EXPECT_EQ(r.exit.exit_code, 0);
  const pid_t orphan = hybrid::test::read_pid(pidfile);
  ASSERT_NE(orphan, 0);  // written before the child exited
  // Polled by pid under a deadline instead of a fixed sleep (see above).
  EXPECT_TRUE(hybrid::test::gone_within(orphan)) << "the orphan survived its session";
  hybrid::test::kill_survivor(orphan);
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
