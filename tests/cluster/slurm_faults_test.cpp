// Faults under the live Slurm: a trial over its job's memory limit is killed by
// Slurm (JobAcctGatherParams=OverMemoryKill in scripts/testslurm.sh) and ends
// `oom`; a trial whose node the test sets DOWN mid-run ends `node_failure`. The
// sweep goes on to a trial that ends `ok`, and the store stays intact with no
// run left `running`.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "profiler/store/run_store.h"
#include "tests/autotune/tune_test_util.h"
#include "tests/cluster/test_slurm.h"

namespace hybrid::autotune {
namespace {

using profiler::TrialStatus;
using SlurmFaults = hybrid::test::SlurmTest;

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

TEST_F(SlurmFaults, AMemoryLimitKillIsOomANodeSetDownIsNodeFailureAndTheSweepGoesOn) {
  // Stage 0 gets 40 MiB and holds its memory after step 1 until Slurm's sampling
  // kills it; stage 1 holds still (its node goes down); stage 2 runs as it is.
  const std::string launch = hybrid::test::write_sweep_files(
      dir_, hybrid::test::memory_hungry_config(), R"({"mbs": [1], "stage": [0, 1, 2]})",
      R"(key=$1; shift
case "$key" in
  *stage=0) exec srun -n 1 --mem=40M -J "hyb-$key" -t 5 "$@" --hold-after-step 1 ;;
  *stage=1) exec srun -n 1 -J "hyb-$key" -t 5 sh -c 'sleep 1000; exec "$@"' hold "$@" ;;
  *) exec srun -n 1 -J "hyb-$key" -t 5 "$@" ;;
esac
)");
  hybrid::test::InBackground sweep(hybrid::test::slurm_sweep(
      slurm_, dir_,
      fmt::format("--space {} --trial-timeout 120 --launcher 'sh {} {{key}} {{cmd}}'",
                  dir_ / "space.json", launch),
      hybrid::test::kMemoryHungrySteps));
  const std::string node = host_name();
  const bool held = slurm_.wait_for_job("hyb-mbs=1,gas=1,stage=1", "RUNNING", 120);
  if (held) {
    slurm_.run(fmt::format("scontrol update nodename={} state=down reason=hybrid-test", node));
    // ReturnToService=2 brings it back when slurmd registers again; resume it if not.
    std::this_thread::sleep_for(std::chrono::seconds(3));
    slurm_.run(fmt::format("scontrol update nodename={} state=resume", node));
  }
  const auto& result = sweep.result();
  ASSERT_TRUE(held) << "the stage=1 trial never ran\n" << result.output;
  ASSERT_EQ(result.exit_code, 0) << result.output;

  auto trials = hybrid::test::trials_by_mbs(dir_ / "tune.db", true);
  ASSERT_EQ(trials.size(), 3u) << result.output;
  const auto& oom = trials["mbs=1,gas=1,stage=0"];
  EXPECT_EQ(oom.status, TrialStatus::oom) << oom.reason << "\n" << oom.output_tail;
  EXPECT_NE(oom.reason.find("memory limit"), std::string::npos) << oom.reason;
  const auto& lost = trials["mbs=1,gas=1,stage=1"];
  EXPECT_EQ(lost.status, TrialStatus::node_failure) << lost.reason << "\n" << lost.output_tail;
  EXPECT_NE(lost.reason.find(node), std::string::npos) << lost.reason;
  const auto& ok = trials["mbs=1,gas=1,stage=2"];
  EXPECT_EQ(ok.status, TrialStatus::ok) << ok.reason << "\n" << ok.output_tail;

  profiler::RunStore store(dir_ / "tune.db", profiler::OpenMode::read_only);
  for (const auto& run : store.list_runs())
    EXPECT_NE(run.status, profiler::RunStatus::running)
        << "run " << run.id << " (" << run.name << ") left running";
  EXPECT_EQ(slurm_.queue(), "") << "a job outlived the sweep";
}

}  // namespace
}  // namespace hybrid::autotune
