#include "engine/comm/factory.h"

#include <mpi.h>

#include "base/launcher_env.h"

namespace hybrid::engine::comm {

int launcher_world_size() { return base::launcher_env().world_size; }

bool launched_with_multiple_ranks() { return launcher_world_size() > 1; }

std::unique_ptr<Communicator> make_communicator(std::function<int64_t()> clock) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (launched_with_multiple_ranks() || (initialized && !finalized))
    return make_mpi_communicator(std::move(clock));
  return make_single_communicator(std::move(clock));
}

}  // namespace hybrid::engine::comm
