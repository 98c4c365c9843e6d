// Child processes as the runner starts them: exit status, captured output, environment,
// timeouts and programs that cannot start.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>

#include "bench/compare/process.h"
#include "bench_test_support.h"

namespace hybrid::bench {
namespace {

using ::testing::HasSubstr;
using testing::read_text;
using testing::ScratchDir;

ProcessOptions to_file(const std::filesystem::path& out) {
  ProcessOptions o;
  o.stdout_file = out;
  return o;
}

TEST(Process, CapturesOutputAndExitCode) {
  ScratchDir dir("proc");
  ProcessResult r = run_process({"sh", "-c", "echo hello; exit 3"}, to_file(dir / "out.txt"));
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.describe(), "exit code 3");
  EXPECT_EQ(read_text(dir / "out.txt"), "hello\n");
}

TEST(Process, ArgumentsAreNotInterpretedByAShell) {
  EXPECT_EQ(capture_output({"printf", "%s|", "a b", "$HOME", "*"}).value(), "a b|$HOME|*|");
}

TEST(Process, EnvironmentOverridesReachTheChild) {
  ScratchDir dir("env");
  ProcessOptions o = to_file(dir / "out.txt");
  o.env = {{"HYBRID_BENCH_TEST_VAR", "42"}, {"OMP_NUM_THREADS", "1"}};
  ProcessResult r =
      run_process({"sh", "-c", "echo $HYBRID_BENCH_TEST_VAR $OMP_NUM_THREADS"}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(read_text(dir / "out.txt"), "42 1\n");
  EXPECT_EQ(std::getenv("HYBRID_BENCH_TEST_VAR"), nullptr);  // the parent is untouched
}

TEST(Process, SignalIsReported) {
  ProcessResult r = run_process({"sh", "-c", "kill -SEGV $$"});
  EXPECT_FALSE(r.exited);
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_THAT(r.describe(), HasSubstr("killed by signal 11"));
}

TEST(Process, TimeoutStopsTheChild) {
  ProcessOptions o;
  o.timeout_s = 0.2;
  ProcessResult r = run_process({"sleep", "30"}, o);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(r.describe(), HasSubstr("timed out"));
}

TEST(Process, MissingProgramIsNamed) {
  try {
    run_process({"/nonexistent/bench_tool"});
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/bench_tool: cannot be started"));
  }
  EXPECT_FALSE(capture_output({"/nonexistent/bench_tool"}).has_value());
  EXPECT_FALSE(capture_output({"false"}).has_value());
}

}  // namespace
}  // namespace hybrid::bench
