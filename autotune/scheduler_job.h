// A trial's Slurm job, as its launcher reports it. srun and salloc say when the
// job waits in the queue ("srun: job 12 queued and waiting for resources",
// "salloc: Pending job allocation 12") and when it gets its resources ("job 12
// has been allocated resources", "Granted job allocation 12"); sbatch names the
// job it submitted ("Submitted batch job 12"). A SchedulerWatch follows the
// trial's log while the launcher runs, so the sweep can say live that a trial
// is pending and when it starts; afterwards the tuner knows which job to
// cancel and whether it ever left the queue.
//
// sbatch writes the job's own output to a file, not to the launcher's output:
// with `-o {dir}/slurm-%j.out` (the convention the tuner reads) the trial's
// directory holds it, and append_job_outputs copies it into the trial's log,
// where the launcher report (autotune/launcher_report.h) finds Slurm's verdict.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace hybrid::autotune {

enum class SchedulerEventKind { none, submitted, queued, started };

struct SchedulerEvent {
  SchedulerEventKind kind = SchedulerEventKind::none;
  int64_t job_id = 0;
};

// What one line of a launcher's output says about its job, if anything.
SchedulerEvent read_scheduler_line(std::string_view line);

struct SchedulerJob {
  std::optional<int64_t> job_id;
  bool queued = false;   // the launcher reported it waiting in the queue
  bool started = false;  // ... and then (or at once) given its resources
};

class SchedulerWatch {
 public:
  using Notice = std::function<void(const std::string&)>;
  // Polls `log` every `poll_s` seconds on a thread of its own; `notice` gets
  // "pending in the scheduler's queue (Slurm job 12)" and, once it starts,
  // "Slurm job 12 started after 3.1 s in the queue".
  SchedulerWatch(std::filesystem::path log, Notice notice, double poll_s = 0.2);
  ~SchedulerWatch();
  SchedulerWatch(const SchedulerWatch&) = delete;
  SchedulerWatch& operator=(const SchedulerWatch&) = delete;

  // Stops the thread and reads what the log gained since (a last line too).
  SchedulerJob stop();

 private:
  void run();
  void read_new(bool to_end);
  void handle(std::string_view line);

  std::filesystem::path log_;
  Notice notice_;
  double poll_s_;
  uintmax_t offset_ = 0;
  std::string partial_;
  SchedulerJob job_;
  std::chrono::steady_clock::time_point queued_at_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

// Appends every `slurm-*.out` of `dir` (sbatch -o {dir}/slurm-%j.out) to `log`,
// each under a line naming it. Returns how many it appended.
int append_job_outputs(const std::filesystem::path& dir, const std::filesystem::path& log);

// Removes the job output files an earlier attempt left in `dir`.
void remove_job_outputs(const std::filesystem::path& dir);

// `scancel JOB` (quiet; a job that already ended is no error), so that a trial
// the tuner gave up on leaves nothing in the queue: sbatch --wait, killed,
// does not cancel its job.
void cancel_job(int64_t job_id);

}  // namespace hybrid::autotune
