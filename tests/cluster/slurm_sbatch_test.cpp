// Trials submitted with `sbatch --wait`: the job's output goes to the file
// named by `-o {dir}/slurm-%j.out`, not to the launcher's output, and the tuner
// reads it from the trial's directory. An ok trial is measured as under srun;
// one whose job gets 40 MiB is killed by Slurm (OverMemoryKill) and ends `oom`
// from slurmstepd's "exceeded memory limit" line in that file. (A time limit
// goes through the same file and report, whose time-limit line is
// unit-tested: Slurm's limits are whole minutes, which would cost a minute.)
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "profiler/store/run_store.h"
#include "tests/autotune/tune_test_util.h"
#include "tests/cluster/test_slurm.h"

namespace hybrid::autotune {
namespace {

using profiler::TrialStatus;
using SlurmSbatch = hybrid::test::SlurmTest;

TEST_F(SlurmSbatch, OkAndMemoryKilledTrialsAreClassifiedFromTheJobsOutputFile) {
  // The tuner quotes the command into the --wrap line ({cmd} inside a word);
  // the script gives mbs=2's job 40 MiB, held after step 1 until Slurm's memory
  // sampling kills it.
  const std::string launch = hybrid::test::write_sweep_files(
      dir_, hybrid::test::memory_hungry_config(), R"({"mbs": [1, 2], "stage": [1]})",
      R"(key=$1; dir=$2; wrap=$3; mem=
case "$key" in mbs=2*) mem=--mem=40M wrap="$wrap --hold-after-step 1" ;; esac
exec sbatch --wait -n 1 -t 5 $mem --job-name="hyb-$key" -o "$dir/slurm-%j.out" --wrap "$wrap"
)");
  const auto result = hybrid::test::run_command(hybrid::test::slurm_sweep(
      slurm_, dir_,
      fmt::format(
          "--space {} --trial-timeout 300 --launcher \"sh {} {{key}} {{dir}} 'srun {{cmd}}'\"",
          dir_ / "space.json", launch),
      hybrid::test::kMemoryHungrySteps));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto trials = hybrid::test::trials_by_mbs(dir_ / "tune.db");
  ASSERT_EQ(trials.size(), 2u) << result.output;

  const auto& ok = trials["mbs=1"];
  EXPECT_EQ(ok.status, TrialStatus::ok) << ok.reason << "\n" << ok.output_tail;
  EXPECT_TRUE(ok.run_id) << "the ok trial's run is linked";
  const auto& killed = trials["mbs=2"];
  EXPECT_EQ(killed.status, TrialStatus::oom) << killed.reason << "\n" << killed.output_tail;
  EXPECT_NE(killed.reason.find("memory limit"), std::string::npos) << killed.reason;
  EXPECT_NE(killed.output_tail.find("the Slurm job's output, slurm-"), std::string::npos)
      << killed.output_tail;
  EXPECT_EQ(slurm_.queue(), "") << "a job outlived the sweep";
}

}  // namespace
}  // namespace hybrid::autotune
