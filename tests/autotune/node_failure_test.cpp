// A lost host, told apart from a crashed rank by the launcher's own words
// (Open MPI 4.1.4's mpirun as captured on the test hosts, and Slurm's).
#include "autotune/node_failure.h"

#include <gtest/gtest.h>

#include "autotune/outcome.h"
#include "tune_test_util.h"

namespace hybrid::autotune {
namespace {

using profiler::TrialStatus;

// What mpirun printed when every process of one test host was killed mid-run.
const std::string kHostKilled =
    R"(--------------------------------------------------------------------------
ORTE was unable to reliably start one or more daemons.
This usually is caused by:
--------------------------------------------------------------------------
An MPI communication peer process has unexpectedly disconnected.  This
usually indicates a failure in the peer process (e.g., a crash or
  Local host: hyb-node1
  Peer host:  hyb-node2
)";

// A rank that crashed: its host is fine.
const std::string kRankCrashed = R"(An MPI communication peer process has unexpectedly disconnected.
  Peer host:  hyb-node2
mpirun noticed that process rank 1 with PID 0 on node hyb-node2 exited on signal 11 (Segmentation fault).
)";

TEST(NodeFailure, FindsTheLaunchersReportOfALostHost) {
  EXPECT_EQ(node_failure_line(kHostKilled),
            "ORTE was unable to reliably start one or more daemons.");
  EXPECT_EQ(node_failure_line("x\nORTE has lost communication with a remote daemon.\n"),
            "ORTE has lost communication with a remote daemon.");
  EXPECT_EQ(node_failure_line("PRTE has lost communication with a remote daemon.\n"),
            "PRTE has lost communication with a remote daemon.");
  EXPECT_EQ(node_failure_line("  srun: error: Node failure on node7\r\n"),
            "srun: error: Node failure on node7");
  EXPECT_EQ(
      node_failure_line(
          "slurmstepd: error: *** STEP 12.0 ON node3 CANCELLED AT 2026-12-03 DUE TO NODE FAILURE"),
      "slurmstepd: error: *** STEP 12.0 ON node3 CANCELLED AT 2026-12-03 DUE TO NODE FAILURE");
  EXPECT_FALSE(node_failure_line(kRankCrashed).has_value());
  EXPECT_FALSE(node_failure_line("").has_value());
  EXPECT_FALSE(node_failure_line("step 3 loss 4.1\n").has_value());
}

ExitInfo exited(int code) {
  ExitInfo e;
  e.exit_code = code;
  return e;
}

TEST(NodeFailure, OutranksWhatTheRanksDidNextButNotTheTrialsOwnVerdict) {
  const ResultFile none;
  const auto lost = classify_trial(exited(9), none, {}, kHostKilled);
  EXPECT_EQ(lost.status, TrialStatus::node_failure);
  EXPECT_NE(lost.reason.find("a host was lost"), std::string::npos) << lost.reason;
  EXPECT_NE(lost.reason.find("unable to reliably start"), std::string::npos) << lost.reason;
  ExitInfo hung;
  hung.timed_out = true;
  hung.timeout_s = 30;
  EXPECT_EQ(classify_trial(hung, none, {}, kHostKilled).status, TrialStatus::node_failure);
  EXPECT_EQ(classify_trial(hung, none, {}, "").status, TrialStatus::timeout);
  EXPECT_EQ(classify_trial(exited(139), none, {}, kRankCrashed).status, TrialStatus::crash);
  // The trial's own verdicts stand.
  const auto oom = read_result_file(test::data_dir() + "/result_oom.json");
  EXPECT_EQ(classify_trial(exited(3), oom, {}, kHostKilled).status, TrialStatus::oom);
  const auto ok = read_result_file(test::data_dir() + "/result_ok.json");
  EXPECT_EQ(classify_trial(exited(0), ok, MeasureWindow{1, 4, {}}, kHostKilled).status,
            TrialStatus::ok);
  EXPECT_EQ(profiler::parse_trial_status("node_failure"), TrialStatus::node_failure);
}

}  // namespace
}  // namespace hybrid::autotune
