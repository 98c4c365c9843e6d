// What the launcher (mpirun, srun, mpiexec.hydra, MVAPICH) tells a process about
// its place before MPI starts, read from the environment in one place. Every
// variable list is ordered: the first one set wins.
#pragma once

#include <optional>

namespace hybrid::base {

struct LauncherEnv {
  int rank = 0;        // OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, SLURM_PROCID
  int world_size = 1;  // OMPI_COMM_WORLD_SIZE, PMI_SIZE, MV2_COMM_WORLD_SIZE, (in a Slurm step)
                       // SLURM_STEP_NUM_TASKS, SLURM_NTASKS
  int local_rank = 0;  // OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID
  int local_size = 1;  // OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS, SLURM_NTASKS_PER_NODE
  bool in_slurm_step = false;  // SLURM_STEP_ID is set
};

// Throws std::runtime_error naming the variable when a value is not a number in
// range (a negative rank, a world size below 1).
LauncherEnv launcher_env();

// The variable's value as a whole number, nullopt when unset; throws as above.
std::optional<int> env_int(const char* name, int min_value);

}  // namespace hybrid::base
