// A trial that lost a host: the launcher's own words for it. Open MPI's mpirun
// (ORTE in 4.x, PRRTE in 5.x) and Slurm's srun say so when a daemon on another
// host died or became unreachable; a rank that crashed is not a node failure
// (its launcher names the signal instead).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hybrid::autotune {

// The first line of `launcher_output` that reports a lost host, trimmed;
// nullopt when none does.
std::optional<std::string> node_failure_line(std::string_view launcher_output);

}  // namespace hybrid::autotune
