// MPI inside Slurm: a 2-rank trial started by `srun --mpi=pmix` (Slurm starts
// the ranks, PMIx wires them up) and one by `mpirun` inside an `salloc`
// allocation both end `ok`, with both ranks in the trial's Slurm job: each rank
// writes its job id and pid before it becomes hybrid-train, and the pids are
// those of the two ranks the trial's run stored.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "profiler/store/run_store.h"
#include "tests/autotune/tune_test_util.h"
#include "tests/cluster/test_slurm.h"

namespace hybrid::autotune {
namespace {

using nlohmann::json;
using profiler::TrialStatus;

// Before it execs the trial command, each rank appends "JOB_ID PID" to {dir}/ranks.
constexpr const char* kRecordRank =
    "#!/bin/sh\ndir=$1; shift\necho \"${SLURM_JOB_ID:-0} $$\" >> \"$dir/ranks\"\nexec \"$@\"\n";

void expect_two_ranks_in_one_job(const std::string& launcher) {
  hybrid::test::TestSlurm slurm;
  HYBRID_REQUIRE_SLURM(slurm);
  test::TempDir dir;
  test::write_json(dir / "cfg.json", test::tiny_config());
  test::write_json(dir / "space.json", json::parse(R"({"mbs": [1], "stage": [1]})"));
  std::ofstream(dir / "rank.sh") << kRecordRank;
  const auto result = hybrid::test::run_command(hybrid::test::slurm_sweep(
      slurm, dir,
      fmt::format(
          "--space {} --nprocs 2 --trial-timeout 120 --launcher \"{} sh {} {{dir}} {{cmd}}\"",
          dir / "space.json", launcher, dir / "rank.sh")));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto trials = hybrid::test::trials_by_mbs(dir / "tune.db");
  ASSERT_EQ(trials.size(), 1u) << result.output;
  const auto& t = trials["mbs=1"];
  ASSERT_EQ(t.status, TrialStatus::ok) << t.reason << "\n" << t.output_tail;
  ASSERT_TRUE(t.run_id) << result.output;

  profiler::RunStore store(dir / "tune.db", profiler::OpenMode::read_only);
  const auto ranks = store.ranks(*t.run_id);
  ASSERT_EQ(ranks.size(), 2u) << "one MPI world of two ranks, not two singletons";
  // The ranks file of the trial's directory: "JOB PID" per rank.
  std::map<int64_t, std::string> job_of_pid;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path())) {
    if (e.path().filename() != "ranks") continue;
    std::istringstream lines(test::read_text(e.path().string()));
    std::string job;
    for (int64_t pid; lines >> job >> pid;) job_of_pid[pid] = job;
  }
  std::set<std::string> jobs;
  for (const auto& r : ranks) {
    ASSERT_TRUE(job_of_pid.count(r.pid))
        << "rank " << r.rank << " (pid " << r.pid << ") did not start through the launcher";
    jobs.insert(job_of_pid[r.pid]);
  }
  ASSERT_EQ(jobs.size(), 1u) << "the ranks ran in different jobs";
  EXPECT_GT(std::stoll(*jobs.begin()), 0) << "a rank ran outside any Slurm job";
  EXPECT_EQ(slurm.queue(), "") << "a job outlived the sweep";
}

TEST(SlurmMpi, SrunWithPmixStartsBothRanksOfATrialInItsJob) {
  expect_two_ranks_in_one_job("srun --mpi=pmix -n {nprocs} -t 5 --job-name=hyb-{key}");
}

TEST(SlurmMpi, MpirunInsideAnSallocAllocationStartsBothRanksInIt) {
  expect_two_ranks_in_one_job(fmt::format(
      "salloc -n {{nprocs}} -t 5 --job-name=hyb-{{key}} {} -np {{nprocs}}", HYBRID_MPIEXEC));
}

}  // namespace
}  // namespace hybrid::autotune
