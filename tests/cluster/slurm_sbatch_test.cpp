// Trials submitted with `sbatch --wait`: the job's output goes to the file
// named by `-o {dir}/slurm-%j.out`, not to the launcher's output, and the tuner
// reads it from the trial's directory. An ok trial is measured as under srun;
// one held past its job's 1-minute limit ends `timeout` from the
// "DUE TO TIME LIMIT" line in that file, long before the tuner's own timeout.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "profiler/store/run_store.h"
#include "tests/autotune/tune_test_util.h"
#include "tests/cluster/test_slurm.h"

namespace hybrid::autotune {
namespace {

using nlohmann::json;
using profiler::TrialStatus;

TEST(SlurmSbatch, OkAndTimeLimitedTrialsAreClassifiedFromTheJobsOutputFile) {
  hybrid::test::TestSlurm slurm;
  HYBRID_REQUIRE_SLURM(slurm);
  test::TempDir dir;
  test::write_json(dir / "cfg.json", test::tiny_config());
  test::write_json(dir / "space.json", json::parse(R"({"mbs": [1, 2], "stage": [1]})"));
  // The tuner quotes the command into the --wrap line ({cmd} inside a word);
  // the script only holds mbs=2 still, under a 1-minute limit.
  const std::string launch = dir / "launch.sh";
  std::ofstream(launch) << "#!/bin/sh\nkey=$1; dir=$2; wrap=$3; limit=5\n"
                           "case \"$key\" in mbs=2*) limit=1; wrap=\"sleep 1000; $wrap\" ;; esac\n"
                           "exec sbatch --wait -n 1 -t \"$limit\" --job-name=\"hyb-$key\" "
                           "-o \"$dir/slurm-%j.out\" --wrap \"$wrap\"\n";
  const auto result = hybrid::test::run_command(hybrid::test::slurm_sweep(
      slurm, dir,
      fmt::format(
          "--space {} --trial-timeout 300 --launcher \"sh {} {{key}} {{dir}} 'srun {{cmd}}'\"",
          dir / "space.json", launch)));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto trials = hybrid::test::trials_by_mbs(dir / "tune.db");
  ASSERT_EQ(trials.size(), 2u) << result.output;

  const auto& ok = trials["mbs=1"];
  EXPECT_EQ(ok.status, TrialStatus::ok) << ok.reason << "\n" << ok.output_tail;
  EXPECT_TRUE(ok.run_id) << "the ok trial's run is linked";
  const auto& limited = trials["mbs=2"];
  EXPECT_EQ(limited.status, TrialStatus::timeout) << limited.reason;
  EXPECT_NE(limited.reason.find("the scheduler's time limit"), std::string::npos) << limited.reason;
  EXPECT_NE(limited.reason.find("DUE TO TIME LIMIT"), std::string::npos) << limited.reason;
  EXPECT_NE(limited.output_tail.find("the Slurm job's output, slurm-"), std::string::npos)
      << limited.output_tail;
  // Ended by Slurm at its 1-minute limit, long before the tuner's 300 s.
  EXPECT_LT(limited.wall_s.value_or(1e9), 120);
  EXPECT_EQ(slurm.queue(), "") << "a job outlived the sweep";
}

}  // namespace
}  // namespace hybrid::autotune
