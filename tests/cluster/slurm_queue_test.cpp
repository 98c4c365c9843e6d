// Trials that wait in Slurm's queue: with the only node held by another job,
// the sweep says live that a trial is pending (with its job id) and again when
// it starts. A trial whose job never starts ends `timeout` at the tuner's
// --trial-timeout, its reason naming the queue, and its job is gone from it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "profiler/store/run_store.h"
#include "tests/autotune/tune_test_util.h"
#include "tests/cluster/test_slurm.h"

namespace hybrid::autotune {
namespace {

using profiler::TrialStatus;
using SlurmQueue = hybrid::test::SlurmTest;

// The tuner's --trial-timeout: what the trial that never starts waits out, and
// the time the released one has, from its srun to its end (the queue, a tiny
// training of a second or two), several times over.
constexpr double kTrialTimeout = 10;

bool wait_for_text(const std::string& path, const std::string& text, double seconds) {
  for (auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
       std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(std::chrono::milliseconds(100)))
    if (test::read_text(path).find(text) != std::string::npos) return true;
  return false;
}

TEST_F(SlurmQueue, PendingTrialsAreShownLiveAndOneThatNeverStartsTimesOutNamingTheQueue) {
  // All of the node's memory held: every trial's job waits behind this one.
  ASSERT_EQ(slurm_.run("sbatch --mem=0 --job-name=hyb-blocker --wrap 'sleep 600'").exit_code, 0);
  ASSERT_TRUE(slurm_.wait_for_job("hyb-blocker", "RUNNING", 30)) << slurm_.queue();
  hybrid::test::write_sweep_files(dir_, test::tiny_config(), R"({"mbs": [1, 2], "stage": [1]})");
  const std::string out = dir_ / "sweep.out";
  // The grid runs mbs=1 (held until its timeout), then mbs=2 (released below).
  hybrid::test::InBackground sweep(
      hybrid::test::slurm_sweep(
          slurm_, dir_,
          fmt::format("--space {} --trial-timeout {:g} --launcher 'srun -n {{nprocs}} -t 5 "
                      "--job-name=hyb-{{key}} {{cmd}}'",
                      dir_ / "space.json", kTrialTimeout)) +
      " > " + out + " 2>&1");
  // Shown while it waits: the line is there before the blocker goes.
  const bool pending_shown =
      wait_for_text(out, "trial mbs=2,gas=1,stage=1: pending in the scheduler's queue", 60);
  const std::string queue_then = slurm_.queue();
  slurm_.run("scancel --name=hyb-blocker");
  const auto& result = sweep.result();
  const std::string printed = test::read_text(out);
  ASSERT_TRUE(pending_shown) << printed;
  ASSERT_EQ(result.exit_code, 0) << printed;
  EXPECT_NE(queue_then.find("hyb-mbs=2,gas=1,stage=1 PENDING"), std::string::npos) << queue_then;
  EXPECT_EQ(queue_then.find("hyb-mbs=1"), std::string::npos)
      << "the timed-out trial's job stayed in the queue:\n"
      << queue_then;

  auto trials = hybrid::test::trials_by_mbs(dir_ / "tune.db");
  ASSERT_EQ(trials.size(), 2u) << printed;
  const auto& never = trials["mbs=1"];
  EXPECT_EQ(never.status, TrialStatus::timeout) << never.reason;
  EXPECT_NE(never.reason.find("pending in the scheduler's queue (Slurm job "), std::string::npos)
      << never.reason;
  EXPECT_NE(never.reason.find("never started"), std::string::npos) << never.reason;
  EXPECT_LT(never.wall_s.value_or(1e9), 3 * kTrialTimeout) << "ended at the tuner's timeout";
  const auto& late = trials["mbs=2"];
  EXPECT_EQ(late.status, TrialStatus::ok) << late.reason << "\n" << late.output_tail;

  // Each trial's pending line, and a start line only for the one that started, after it.
  EXPECT_NE(printed.find("trial mbs=1,gas=1,stage=1: pending in the scheduler's queue (Slurm job "),
            std::string::npos)
      << printed;
  EXPECT_EQ(printed.find("trial mbs=1,gas=1,stage=1: Slurm job"), std::string::npos) << printed;
  const size_t pending = printed.find("trial mbs=2,gas=1,stage=1: pending");
  const size_t started = printed.find("trial mbs=2,gas=1,stage=1: Slurm job ");
  ASSERT_NE(started, std::string::npos) << printed;
  EXPECT_LT(pending, started) << printed;
  EXPECT_NE(printed.find("s in the queue", started), std::string::npos) << printed;
  EXPECT_EQ(slurm_.queue(), "") << "a job outlived the sweep";
}

}  // namespace
}  // namespace hybrid::autotune
