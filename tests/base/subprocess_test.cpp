// Children through base::run_subprocess, with real processes: exit codes and
// signals, output files (truncate, append, stderr merged), environment, a
// command that cannot start, a timeout that kills the whole process group, and
// cancellation.
#include "base/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "tests/base/base_test_util.h"
#include "tests/common/process_gone.h"

namespace hybrid::base {
namespace {

namespace fs = std::filesystem;

using hybrid::test::gone_within;
using hybrid::test::kill_survivor;
using hybrid::test::read_pid;
using test::read;
using test::TempDir;

TEST(Subprocess, ExitCodesAndSignals) {
  auto r = run_subprocess({"sh", "-c", "exit 3"});
  EXPECT_TRUE(r.started);
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.describe(), "exit code 3");
  r = run_subprocess({"sh", "-c", "kill -SEGV $$"});
  EXPECT_FALSE(r.exited);
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_NE(r.describe().find("signal 11"), std::string::npos) << r.describe();
  EXPECT_TRUE(run_subprocess({"true"}).ok());
}

TEST(Subprocess, OutputFilesAndEnvironment) {
  TempDir d;
  SubprocessOptions o;
  o.stdout_file = d.path / "log";
  o.stderr_to_stdout = true;
  o.env = {{"HYBRID_TEST_VALUE", "42"}};
  ASSERT_TRUE(run_subprocess({"sh", "-c", "echo out $HYBRID_TEST_VALUE; echo err >&2"}, o).ok());
  EXPECT_EQ(read(d.path / "log"), "out 42\nerr\n");
  o.append = true;
  ASSERT_TRUE(run_subprocess({"sh", "-c", "echo again"}, o).ok());
  EXPECT_EQ(read(d.path / "log"), "out 42\nerr\nagain\n");
  o.append = false;
  ASSERT_TRUE(run_subprocess({"sh", "-c", "echo fresh"}, o).ok());
  EXPECT_EQ(read(d.path / "log"), "fresh\n");
  EXPECT_EQ(capture_output({"sh", "-c", "printf 'abc\\n\\n'"}), "abc");
  EXPECT_EQ(capture_output({"false"}), std::nullopt);
}

// What shell_join writes, a shell reads back as the same words.
TEST(Subprocess, ShellJoinRoundTripsThroughARealShell) {
  const std::vector<std::string> words = {"mpirun", "-np", "2",   "a b", "it's", "",
                                          "$HOME",  "*",   "x;y", "\\n", "--k=v"};
  EXPECT_EQ(shell_join({"a", "b c", "it's", "--np=2"}), "a 'b c' 'it'\\''s' --np=2");
  const auto back = capture_output({"sh", "-c", "printf '[%s]' " + shell_join(words)});
  std::string expected;
  for (const auto& w : words) expected += "[" + w + "]";
  EXPECT_EQ(back, expected);
}

TEST(Subprocess, ACommandThatCannotStartSaysWhy) {
  const auto r = run_subprocess({"/nonexistent/hybrid-no-such-tool", "x"});
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.start_error.find("No such file"), std::string::npos) << r.start_error;
  EXPECT_FALSE(run_subprocess({}).started);
}

// The child's script ("$1": a pidfile) starts a grandchild that writes its pid
// there and sleeps long, then sleeps long itself, so only the timeout ends it.
struct TimedOutRun {
  SubprocessResult result;
  double timeout_s = 0;
  pid_t grandchild = 0;  // 0: it never wrote its pid
};

TimedOutRun run_until_timed_out(const std::string& script, const fs::path& pidfile) {
  TimedOutRun run;
  SubprocessOptions o;  // a session of its own, killed whole: SIGTERM, then SIGKILL 0.5 s on
  o.own_session = true;
  o.kill_grace_s = 0.5;
  // The timeout doubles until the grandchild wrote its pid before it struck: on a
  // loaded machine a short one can strike before the grandchild has started.
  for (o.timeout_s = 0.5; run.grandchild == 0 && o.timeout_s <= 16; o.timeout_s *= 2) {
    fs::remove(pidfile);
    run.result = run_subprocess({"sh", "-c", script, "sh", pidfile.string()}, o);
    run.timeout_s = o.timeout_s;
    run.grandchild = read_pid(pidfile);
  }
  return run;
}

TEST(Subprocess, TimeoutKillsTheWholeGroup) {
  TempDir d;
  // The grandchild ignores nothing (the SIGTERM to the group ends it) and becomes the
  // sleeper (exec), so that a survivor is the process the test kills.
  const TimedOutRun run = run_until_timed_out(
      R"(sh -c 'echo $$ > "$1"; exec sleep 60' sh "$1" & sleep 60)", d.path / "grandchild.pid");
  ASSERT_NE(run.grandchild, 0) << "the grandchild never started";
  EXPECT_TRUE(run.result.timed_out);
  // Killed, not waited for (its own end was 60 s away): the exit status says so,
  // and the timeout struck no sooner than due; no upper bound on a wall time.
  EXPECT_FALSE(run.result.exited);
  EXPECT_GE(run.result.wall_s, run.timeout_s);
  EXPECT_NE(run.result.describe().find("timed out"), std::string::npos);
  // Its death by pid under a deadline: the kill is sent before run_subprocess
  // returns, but the kernel ends the process in its own time.
  EXPECT_TRUE(gone_within(run.grandchild)) << "the grandchild outlived the timeout";
  kill_survivor(run.grandchild);
}

// mpirun puts every rank in a process group of its own: those go too, as
// members of the child's session.
TEST(Subprocess, TimeoutKillsGroupsOfItsOwnInTheSession) {
  TempDir d;
  // perl (in every Debian base system) moves itself to a process group of its
  // own and ignores SIGTERM before it writes its pid.
  const TimedOutRun run = run_until_timed_out(
      R"(perl -e 'setpgrp(0, 0); $SIG{TERM} = "IGNORE"; open(my $f, ">", $ARGV[0]) or die;)"
      R"( print $f "$$\n"; close $f; sleep 60' "$1" & sleep 60)",
      d.path / "own-group.pid");
  ASSERT_NE(run.grandchild, 0) << "the grandchild never started";
  EXPECT_TRUE(run.result.timed_out);
  // Its death by pid under a deadline (see above).
  EXPECT_TRUE(gone_within(run.grandchild)) << "a process group of the session outlived the timeout";
  kill_survivor(run.grandchild);
}

TEST(Subprocess, CancelStopsTheChild) {
  std::atomic<bool> cancel{false};
  SubprocessOptions o;
  o.cancel = &cancel;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel = true;
  });
  const auto r = run_subprocess({"sleep", "30"}, o);
  t.join();
  EXPECT_TRUE(r.cancelled);
  EXPECT_LT(r.wall_s, 10.0);
}

TEST(Subprocess, ReadTailKeepsTheLastWholeLines) {
  TempDir d;
  std::ofstream(d.path / "f") << "one\ntwo\nthree\nfour\n";
  EXPECT_EQ(read_tail(d.path / "f", 2), "three\nfour\n");
  EXPECT_EQ(read_tail(d.path / "f", 10, 9), "four\n");  // the last 9 bytes, whole lines only
  EXPECT_EQ(read_tail(d.path / "missing"), "");
}

}  // namespace
}  // namespace hybrid::base
