// Picks the communicator for how this process was started: MPI when a launcher
// (mpirun, srun) started several ranks or MPI is already initialised, the
// single-process one otherwise. (NCCL is chosen by the engine for GPU runs.)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "engine/comm/communicator.h"

namespace hybrid::engine::comm {

// World size announced by the launcher's environment, without initialising MPI
// (base::launcher_env(): Open MPI, MPICH/Hydra, MVAPICH, or an srun step; a batch
// script alone is one process). 1 when none is set. Throws std::runtime_error
// naming the variable if its value is not a positive integer.
int launcher_world_size();

std::unique_ptr<Communicator> make_communicator(std::function<int64_t()> clock = {});

}  // namespace hybrid::engine::comm
