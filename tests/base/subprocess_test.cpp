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

namespace hybrid::base {
namespace {

namespace fs = std::filesystem;

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

TEST(Subprocess, TimeoutKillsTheWholeGroup) {
  TempDir d;
  const auto marker = d.path / "grandchild-alive";
  SubprocessOptions o;
  o.own_session = true;
  o.timeout_s = 0.5;
  o.kill_grace_s = 0.5;
  // The child starts a grandchild that ignores nothing and would touch a file later.
  const std::string script = "(sleep 2; touch " + marker.string() + ") & sleep 30";
  const auto r = run_subprocess({"sh", "-c", script}, o);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.wall_s, 5.0);
  EXPECT_NE(r.describe().find("timed out"), std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_FALSE(fs::exists(marker)) << "the grandchild outlived the timeout";
}

// mpirun puts every rank in a process group of its own: those go too, as
// members of the child's session.
TEST(Subprocess, TimeoutKillsGroupsOfItsOwnInTheSession) {
  TempDir d;
  const auto marker = d.path / "own-group-alive";
  SubprocessOptions o;
  o.own_session = true;
  o.timeout_s = 0.5;
  o.kill_grace_s = 0.5;
  // perl (in every Debian base system) moves itself to a process group of its
  // own, ignores SIGTERM, and would create the marker later.
  const std::string script =
      "perl -e 'setpgrp(0, 0); $SIG{TERM} = \"IGNORE\"; sleep 2; open(my $f, \">\", $ARGV[0])' " +
      marker.string() + " & sleep 30";
  const auto r = run_subprocess({"sh", "-c", script}, o);
  EXPECT_TRUE(r.timed_out);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_FALSE(fs::exists(marker)) << "a process group of the session outlived the timeout";
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
