// What Slurm's launchers say about a trial's job (the lines below are theirs,
// from Slurm 22.05), followed as the log grows; sbatch's job output files
// copied into the trial's log.
#include "autotune/scheduler_job.h"

#include <gtest/gtest.h>

#include <fstream>
#include <vector>

#include "tests/autotune/tune_test_util.h"

namespace hybrid::autotune {
namespace {

using K = SchedulerEventKind;

void expect_event(const std::string& line, K kind, int64_t job) {
  const SchedulerEvent e = read_scheduler_line(line);
  EXPECT_EQ(e.kind, kind) << line;
  EXPECT_EQ(e.job_id, job) << line;
}

TEST(SchedulerJob, ReadsSrunSallocAndSbatchLines) {
  expect_event("srun: job 3 queued and waiting for resources", K::queued, 3);
  expect_event("srun: job 3 has been allocated resources", K::started, 3);
  expect_event("salloc: Pending job allocation 41", K::queued, 41);
  expect_event("salloc: job 41 queued and waiting for resources", K::queued, 41);
  expect_event("salloc: Granted job allocation 41", K::started, 41);
  expect_event("Submitted batch job 1234567", K::submitted, 1234567);
  expect_event("srun: Job allocation 3 has been revoked", K::none, 0);
  expect_event("step 3 loss 4.1 (job 2)", K::none, 0);
  expect_event("", K::none, 0);
}

TEST(SchedulerWatch, ReportsPendingThenStartedOnceEach) {
  test::TempDir dir;
  const std::string log = dir / "output.log";
  std::ofstream(log) << "salloc: Pending job allocation 7\n";
  std::vector<std::string> notices;
  SchedulerWatch watch(
      log, [&](const std::string& n) { notices.push_back(n); }, 0.01);
  {
    std::ofstream out(log, std::ios::app);
    // A line written in two pieces, the last without its newline.
    out << "salloc: job 7 queued and wait" << std::flush;
    out << "ing for resources\nsalloc: job 7 has been allocated resources\n";
    out << "salloc: Granted job allocation 7";
  }
  const SchedulerJob job = watch.stop();
  ASSERT_TRUE(job.job_id);
  EXPECT_EQ(*job.job_id, 7);
  EXPECT_TRUE(job.queued);
  EXPECT_TRUE(job.started);
  ASSERT_EQ(notices.size(), 2u);
  EXPECT_EQ(notices[0], "pending in the scheduler's queue (Slurm job 7)");
  EXPECT_EQ(notices[1].rfind("Slurm job 7 started after ", 0), 0u) << notices[1];
}

TEST(SchedulerWatch, SaysNothingForAJobThatStartsAtOnceOrASubmittedOne) {
  test::TempDir dir;
  const std::string log = dir / "output.log";
  std::ofstream(log) << "Submitted batch job 12\n";
  int notices = 0;
  SchedulerWatch watch(
      log, [&](const std::string&) { ++notices; }, 0.01);
  const SchedulerJob job = watch.stop();
  EXPECT_EQ(job.job_id.value_or(0), 12);
  EXPECT_FALSE(job.queued);
  EXPECT_FALSE(job.started);
  EXPECT_EQ(notices, 0);
  // No log at all (the launcher never started): no job.
  SchedulerWatch none(dir / "absent.log", nullptr, 0.01);
  EXPECT_FALSE(none.stop().job_id);
}

TEST(SchedulerJob, AppendsSbatchOutputsToTheLogAndRemovesThem) {
  test::TempDir dir;
  const std::string log = dir / "output.log";
  std::ofstream(log) << "Submitted batch job 5\n";
  std::ofstream(dir / "slurm-5.out") << "slurmstepd: error: *** JOB 5 CANCELLED AT 1 ***\n";
  std::ofstream(dir / "slurm-6.out");  // empty
  std::ofstream(dir / "result.json") << "{}";
  EXPECT_EQ(append_job_outputs(dir.path(), log), 2);
  const std::string text = test::read_text(log);
  EXPECT_NE(text.find("Submitted batch job 5\n[hybrid-tune] the Slurm job's output, slurm-5.out:\n"
                      "slurmstepd: error: *** JOB 5 CANCELLED AT 1 ***"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("slurm-6.out:"), std::string::npos) << text;
  EXPECT_EQ(text.find("{}"), std::string::npos) << text;
  remove_job_outputs(dir.path());
  EXPECT_FALSE(std::filesystem::exists(dir / "slurm-5.out"));
  EXPECT_FALSE(std::filesystem::exists(dir / "slurm-6.out"));
  EXPECT_TRUE(std::filesystem::exists(dir / "result.json"));
}

}  // namespace
}  // namespace hybrid::autotune
