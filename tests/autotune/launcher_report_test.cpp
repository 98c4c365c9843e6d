// How a trial ended, in the launcher's own words (Open MPI 4.1.4's mpirun as
// captured on the test hosts, Slurm's srun and slurmstepd): a lost host, a time
// limit, a cancellation, the OOM killer; a crashed rank is none of these.
#include "autotune/launcher_report.h"

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

std::string line_of(const std::string& out, LauncherVerdict want) {
  const auto r = read_launcher_report(out);
  return r.verdict == want ? r.line : "(verdict " + std::to_string(int(r.verdict)) + ")";
}

TEST(LauncherReport, FindsALostHost) {
  using V = LauncherVerdict;
  EXPECT_EQ(line_of(kHostKilled, V::node_failure),
            "ORTE was unable to reliably start one or more daemons.");
  EXPECT_EQ(line_of("x\nORTE has lost communication with a remote daemon.\n", V::node_failure),
            "ORTE has lost communication with a remote daemon.");
  EXPECT_EQ(line_of("PRTE has lost communication with a remote daemon.\n", V::node_failure),
            "PRTE has lost communication with a remote daemon.");
  EXPECT_EQ(line_of("  srun: error: Node failure on node7\r\n", V::node_failure),
            "srun: error: Node failure on node7");
  EXPECT_EQ(read_launcher_report(kRankCrashed).verdict, V::none);
  EXPECT_EQ(read_launcher_report("").verdict, V::none);
  EXPECT_EQ(read_launcher_report("step 3 loss 4.1\n").verdict, V::none);
}

TEST(LauncherReport, FindsSlurmsTimeLimitCancelAndOomKill) {
  using V = LauncherVerdict;
  const std::string limit =
      "slurmstepd: error: *** STEP 12.0 ON vm CANCELLED AT 2026-12-03T21:30:00 DUE TO TIME LIMIT "
      "***";
  EXPECT_EQ(line_of(limit + "\nsrun: Job step aborted\n", V::time_limit), limit);
  const std::string cancel =
      "slurmstepd: error: *** STEP 13.0 ON vm CANCELLED AT 2026-12-03T21:31:00 ***";
  EXPECT_EQ(line_of("srun: Job step aborted\n" + cancel, V::cancelled), cancel);
  EXPECT_EQ(line_of("srun: error: Job has been cancelled\n", V::cancelled),
            "srun: error: Job has been cancelled");
  EXPECT_EQ(line_of("slurmstepd: error: Detected 1 oom-kill event(s) in StepId=14.0.\n", V::oom),
            "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=14.0.");
  // OverMemoryKill (jobacct_gather), as slurmstepd and srun say it.
  const std::string over =
      "slurmstepd-vm: error: StepId=1.0 exceeded memory limit (103792640 > 20971520), being "
      "killed";
  EXPECT_EQ(line_of(over + "\nsrun: Exceeded job memory limit\n", V::oom), over);
  // A lost node's steps are cancelled too: the node failure is the cause.
  const std::string node =
      "slurmstepd: error: *** STEP 15.0 ON n3 CANCELLED AT 2026 DUE TO NODE FAILURE ***";
  EXPECT_EQ(line_of(cancel + "\n" + node, V::node_failure), node);
}

ExitInfo exited(int code) {
  ExitInfo e;
  e.exit_code = code;
  return e;
}

TEST(LauncherReport, OutranksWhatTheRanksDidNextButNotTheTrialsOwnVerdict) {
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
  // Slurm's verdicts, each as its status.
  const auto limited = classify_trial(
      exited(1), none, {}, "slurmstepd: error: *** STEP 1.0 CANCELLED AT 2 DUE TO TIME LIMIT ***");
  EXPECT_EQ(limited.status, TrialStatus::timeout);
  EXPECT_NE(limited.reason.find("the scheduler's time limit"), std::string::npos) << limited.reason;
  EXPECT_EQ(
      classify_trial(exited(1), none, {}, "slurmstepd: error: *** STEP 1.0 CANCELLED AT 2 ***")
          .status,
      TrialStatus::cancelled);
  EXPECT_EQ(classify_trial(exited(137), none, {}, "Detected 1 oom-kill event(s)").status,
            TrialStatus::oom);
  EXPECT_EQ(profiler::parse_trial_status("cancelled"), TrialStatus::cancelled);
  // srun exits 0 after a node failure: no result is enough to read its report.
  const auto node = classify_trial(exited(0), none, {}, "srun: error: Node failure on vm\n");
  EXPECT_EQ(node.status, TrialStatus::node_failure) << node.reason;
  EXPECT_EQ(classify_trial(exited(0), none, {}, "").status, TrialStatus::failed);
}

}  // namespace
}  // namespace hybrid::autotune
