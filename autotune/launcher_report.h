// What the launcher said about how a trial ended, where the exit status cannot
// say it: Open MPI's mpirun (ORTE in 4.x, PRRTE in 5.x) reports a host it
// lost; Slurm's srun and slurmstepd report a lost node, the job's time limit,
// a cancellation (scancel) and the kernel's OOM killer. A rank that crashed is
// none of these (its launcher names the signal instead).
#pragma once

#include <string>
#include <string_view>

namespace hybrid::autotune {

enum class LauncherVerdict {
  none,
  node_failure,  // a host (its daemon) lost, failed or unreachable
  time_limit,    // the scheduler's time limit ended the job
  cancelled,     // cancelled by the scheduler or its user (scancel)
  oom,           // the OOM killer (cgroup memory limit) ended a process
};

struct LauncherReport {
  LauncherVerdict verdict = LauncherVerdict::none;
  std::string line;  // the launcher's line, trimmed
};

// The first line of `launcher_output` with a verdict; a later node failure
// outranks an earlier cancellation (slurmstepd cancels the steps of a lost node).
LauncherReport read_launcher_report(std::string_view launcher_output);

}  // namespace hybrid::autotune
