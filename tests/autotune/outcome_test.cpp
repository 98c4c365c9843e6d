// Outcome classification from exit statuses and result-JSON fixtures written by
// hybrid-train (tests/autotune/data/result_*.json), and the measured window.
#include "autotune/outcome.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>

#include "tune_test_util.h"

namespace hybrid::autotune {
namespace {

using profiler::TrialStatus;
using ::testing::HasSubstr;

ResultFile fixture(const std::string& name) {
  return read_result_file(test::data_dir() + "/" + name);
}

ExitInfo exited(int code) {
  ExitInfo e;
  e.exit_code = code;
  return e;
}

ExitInfo signaled(int sig) {
  ExitInfo e;
  e.signal = sig;
  return e;
}

TEST(Outcome, OkNeedsExitZeroAndAnOkResult) {
  const ResultFile ok = fixture("result_ok.json");
  ASSERT_TRUE(ok.json);
  const TrialOutcome o = classify_trial(exited(0), ok, MeasureWindow{1, 4, {}});
  EXPECT_EQ(o.status, TrialStatus::ok);
  ASSERT_TRUE(o.measurement);
  // Without per-step times the window falls back to hybrid-train's median.
  EXPECT_DOUBLE_EQ(o.measurement->step_ms, (*ok.json)["ms_per_step_median"].get<double>());
  EXPECT_NEAR(o.measurement->samples_per_s, (*ok.json)["samples_per_s"].get<double>(), 1e-6);
  EXPECT_NEAR(o.measurement->tokens_per_s, (*ok.json)["tokens_per_s"].get<double>(), 1e-6);
  EXPECT_NEAR(o.measurement->flops_per_s, (*ok.json)["achieved_flops_per_s"].get<double>(), 1e-3);
  EXPECT_EQ(o.peak_mem_bytes, (*ok.json)["peak_memory_total_bytes"].get<uint64_t>());
  EXPECT_THAT(o.reason, HasSubstr("median over all steps"));
  // The same result with a non-zero exit is not a success.
  EXPECT_EQ(classify_trial(exited(1), ok, {}).status, TrialStatus::failed);
  EXPECT_EQ(classify_trial(exited(137), ok, {}).status, TrialStatus::crash);
}

TEST(Outcome, ErrorResultsWin) {
  const TrialOutcome oom = classify_trial(exited(3), fixture("result_oom.json"), {});
  EXPECT_EQ(oom.status, TrialStatus::oom);
  EXPECT_THAT(oom.reason, HasSubstr("OutOfMemoryError: out of memory: allocating"));
  // mpirun reports a rank's OOM exit as its own non-zero status; the result still says oom.
  EXPECT_EQ(classify_trial(exited(1), fixture("result_oom.json"), {}).status, TrialStatus::oom);
  const TrialOutcome cfg = classify_trial(exited(2), fixture("result_config_error.json"), {});
  EXPECT_EQ(cfg.status, TrialStatus::config_error);
  EXPECT_THAT(cfg.reason, HasSubstr("zero_optimization.stage must be 0..3, got 5"));
  const TrialOutcome failed = classify_trial(exited(1), fixture("result_failed.json"), {});
  EXPECT_EQ(failed.status, TrialStatus::failed);
  EXPECT_THAT(failed.reason, HasSubstr("vocab_size 64 is too small"));
}

// hybrid-train's result and exit status 4 for a run whose loss went NaN.
TEST(Outcome, ADivergedRunIsADivergedTrialThatSaysSo) {
  const TrialOutcome d = classify_trial(exited(4), fixture("result_diverged.json"), {});
  EXPECT_EQ(d.status, TrialStatus::diverged);
  EXPECT_FALSE(d.measurement);
  EXPECT_THAT(d.reason, HasSubstr("Diverged: training diverged: the loss was NaN or infinite"));
  const TrialOutcome bare = classify_trial(exited(4), fixture("missing.json"), {});
  EXPECT_EQ(bare.status, TrialStatus::diverged);
  EXPECT_THAT(bare.reason, HasSubstr("exit status 4 (diverged)"));
}

TEST(Outcome, SignalsAreCrashesWhateverTheOutputSays) {
  const TrialOutcome seg = classify_trial(signaled(SIGSEGV), fixture("missing.json"), {});
  EXPECT_EQ(seg.status, TrialStatus::crash);
  EXPECT_THAT(seg.reason, HasSubstr("SIGSEGV"));
  // mpirun exits 128 + N when a rank died of signal N.
  const TrialOutcome via_mpirun =
      classify_trial(exited(128 + SIGKILL), fixture("missing.json"), {});
  EXPECT_EQ(via_mpirun.status, TrialStatus::crash);
  EXPECT_THAT(via_mpirun.reason, HasSubstr("SIGKILL"));
  EXPECT_EQ(classify_trial(signaled(SIGABRT), fixture("result_ok.json"), {}).status,
            TrialStatus::crash);
}

TEST(Outcome, TimeoutComesFirst) {
  ExitInfo e = signaled(SIGTERM);
  e.timed_out = true;
  e.timeout_s = 7;
  const TrialOutcome o = classify_trial(e, fixture("result_ok.json"), {});
  EXPECT_EQ(o.status, TrialStatus::timeout);
  EXPECT_THAT(o.reason, HasSubstr("7 s"));
}

TEST(Outcome, WithoutAResultTheExitStatusDecides) {
  EXPECT_EQ(classify_trial(exited(3), fixture("missing.json"), {}).status, TrialStatus::oom);
  EXPECT_EQ(classify_trial(exited(2), fixture("missing.json"), {}).status,
            TrialStatus::config_error);
  const TrialOutcome zero = classify_trial(exited(0), fixture("missing.json"), {});
  EXPECT_EQ(zero.status, TrialStatus::failed);
  EXPECT_THAT(zero.reason, HasSubstr("no result file"));
  const ResultFile truncated = fixture("result_truncated.json");
  EXPECT_FALSE(truncated.json);
  EXPECT_THAT(truncated.problem, HasSubstr("not valid JSON"));
  EXPECT_EQ(classify_trial(exited(0), truncated, {}).status, TrialStatus::failed);
  ExitInfo not_started;
  not_started.started = false;
  not_started.start_error = "srun: No such file or directory";
  const TrialOutcome ns = classify_trial(not_started, fixture("missing.json"), {});
  EXPECT_EQ(ns.status, TrialStatus::failed);
  EXPECT_THAT(ns.reason, HasSubstr("srun: No such file"));
}

TEST(Outcome, TheWindowIsTheMedianOfTheProfiledSteps) {
  const ResultFile r =
      fixture("result_ok_step_ms.json");  // step_ms = 100 40 10 30 20 35, 50 samples/s at 20 ms
  // Steps 2..5: 40 10 30 20 → median 25 ms; rates scale from the 20 ms median.
  const TrialOutcome o = classify_trial(exited(0), r, MeasureWindow{2, 5, {}});
  ASSERT_EQ(o.status, TrialStatus::ok);
  EXPECT_DOUBLE_EQ(o.measurement->step_ms, 25.0);
  EXPECT_DOUBLE_EQ(o.measurement->samples_per_s, 50.0 * 20.0 / 25.0);
  EXPECT_DOUBLE_EQ(o.measurement->flops_per_s, 1e8 / 0.025);
  EXPECT_EQ(o.run_id, 42);
  EXPECT_THAT(o.reason, HasSubstr("steps 2..5 (result step_ms)"));
  // The minimum instead of the median: the undisturbed step (10 ms).
  MeasureWindow fastest{2, 5, {}};
  fastest.statistic = StepStatistic::min;
  const TrialOutcome m0 = classify_trial(exited(0), r, fastest);
  EXPECT_DOUBLE_EQ(m0.measurement->step_ms, 10.0);
  EXPECT_DOUBLE_EQ(m0.measurement->samples_per_s, 50.0 * 20.0 / 10.0);
  EXPECT_THAT(m0.reason, HasSubstr("min of steps 2..5"));
  EXPECT_EQ(parse_statistic("min"), StepStatistic::min);
  EXPECT_THROW(parse_statistic("mean"), std::runtime_error);
  // Per-step times from the run store serve when the result has none.
  const ResultFile plain = fixture("result_ok.json");
  std::string source;
  const Measurement m = measure(*plain.json, MeasureWindow{3, 4, {9.0, 9.0, 4.0, 6.0}}, &source);
  EXPECT_DOUBLE_EQ(m.step_ms, 5.0);
  EXPECT_THAT(source, HasSubstr("run store"));
  // A window beyond the recorded steps falls back to the median over all steps.
  const Measurement fb = measure(*plain.json, MeasureWindow{3, 9, {1.0, 2.0}}, &source);
  EXPECT_DOUBLE_EQ(fb.step_ms, (*plain.json)["ms_per_step_median"].get<double>());
}

}  // namespace
}  // namespace hybrid::autotune
