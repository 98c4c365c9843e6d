// The MPI calls behind each collective, run on the communication thread. Counts
// are size_t but MPI's are int: a collective whose counts (or, for the
// v-variants, displacements) exceed `chunk` elements is split — all-reduce and
// broadcast into consecutive pieces, reduce-scatter into one MPI_Reduce per
// destination rank and piece, all-gather into one MPI_Bcast per source rank and
// piece, all-to-all into one MPI_Alltoall per piece of every block. Every rank
// computes the same split from the same arguments.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/comm/mpi_types.h"

namespace hybrid::engine::comm {

struct MpiContext {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int world_size = 1;
  const MpiTypes* types = nullptr;
  size_t chunk = 0;  // most elements per MPI call, 1..INT_MAX
};

void mpi_all_reduce(const MpiContext& c, void* buf, size_t count, DType dt, ReduceOp op);
// recv may overlap send (e.g. this rank's slot of a flat gradient buffer): the
// result then goes through a temporary.
void mpi_reduce_scatter(const MpiContext& c, const void* send, void* recv,
                        const std::vector<size_t>& counts, DType dt, ReduceOp op);
// send == this rank's slot in recv runs in place (MPI_IN_PLACE).
void mpi_all_gather(const MpiContext& c, const void* send, void* recv,
                    const std::vector<size_t>& counts, DType dt);
void mpi_broadcast(const MpiContext& c, void* buf, size_t bytes, int root);
void mpi_barrier(const MpiContext& c);
// Blocks of `bytes_per_rank` bytes; past `chunk` bytes per block, one
// MPI_Alltoall per piece through packed temporaries.
void mpi_all_to_all(const MpiContext& c, const void* send, void* recv, size_t bytes_per_rank);

}  // namespace hybrid::engine::comm
