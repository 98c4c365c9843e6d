// hybrid-tune under a real Slurm (scripts/testslurm.sh: Debian's slurmctld and
// slurmd on this machine): trials launched by srun are classified, one the
// test cancels with scancel as `cancelled`, one that overruns its job's time
// limit as `timeout` (the scheduler's, not the tuner's), and the rest `ok`.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "profiler/store/run_store.h"
#include "tests/autotune/tune_test_util.h"
#include "tests/cluster/test_slurm.h"

namespace hybrid::autotune {
namespace {

using profiler::TrialStatus;
using SlurmSweep = hybrid::test::SlurmTest;

TEST_F(SlurmSweep, TrialsUnderSrunAreClassifiedIncludingScancelAndTheTimeLimit) {
  // The launcher routes by trial key: mbs=2 and mbs=4 hold still before
  // training (the first for scancel, the second past its 1-minute limit).
  const std::string launch = hybrid::test::write_sweep_files(dir_, test::tiny_config(),
                                                             R"({"mbs": [1, 2, 4], "stage": [1]})",
                                                             R"(key=$1; shift
case "$key" in
  mbs=1*) exec srun -n 1 --job-name="hyb-$key" -t 5 "$@" ;;
  *) exec srun -n 1 --job-name="hyb-$key" -t 1 sh -c 'sleep 1000; exec "$@"' hold "$@" ;;
esac
)");
  const std::string db = dir_ / "tune.db";
  hybrid::test::InBackground sweep(hybrid::test::slurm_sweep(
      slurm_, dir_,
      fmt::format("--space {} --launcher 'sh {} {{key}} {{cmd}}' --trial-timeout 300",
                  dir_ / "space.json", launch)));
  // Cancel the mbs=2 trial's job once Slurm runs it.
  const std::string squeue = "env " + slurm_.env_ + " squeue -h -o %j";
  bool cancelled = false;
  for (int i = 0; i < 1200 && !cancelled; ++i) {
    const auto q = hybrid::test::run_command(squeue);
    if (q.output.find("hyb-mbs=2") != std::string::npos) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      const std::string name = q.output.substr(q.output.find("hyb-mbs=2"));
      hybrid::test::run_command("env " + slurm_.env_ +
                                " scancel --name=" + name.substr(0, name.find('\n')));
      cancelled = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const auto& result = sweep.result();
  ASSERT_TRUE(cancelled) << "the mbs=2 trial never ran\n" << result.output;
  ASSERT_EQ(result.exit_code, 0) << result.output;

  profiler::RunStore store(db, profiler::OpenMode::read_only);
  EXPECT_EQ(store.integrity_check(), "ok");
  const auto sweeps = store.sweeps();
  ASSERT_EQ(sweeps.size(), 1u);
  std::map<std::string, profiler::TrialRow> by_mbs;
  for (const auto& t : store.trials(sweeps[0].id)) by_mbs[t.key.substr(0, t.key.find(','))] = t;
  ASSERT_EQ(by_mbs.size(), 3u) << result.output;
  EXPECT_EQ(by_mbs["mbs=1"].status, TrialStatus::ok) << by_mbs["mbs=1"].reason;
  EXPECT_EQ(by_mbs["mbs=2"].status, TrialStatus::cancelled) << by_mbs["mbs=2"].reason;
  EXPECT_NE(by_mbs["mbs=2"].reason.find("CANCELLED AT"), std::string::npos);
  EXPECT_EQ(by_mbs["mbs=4"].status, TrialStatus::timeout) << by_mbs["mbs=4"].reason;
  EXPECT_NE(by_mbs["mbs=4"].reason.find("the scheduler's time limit"), std::string::npos)
      << by_mbs["mbs=4"].reason;
  // Ended by Slurm at its 1-minute limit, long before the tuner's 300 s.
  EXPECT_LT(by_mbs["mbs=4"].wall_s.value_or(1e9), 120);
  EXPECT_EQ(hybrid::test::run_command(squeue).output, "") << "a job outlived the sweep";
}

}  // namespace
}  // namespace hybrid::autotune
