#include "engine/comm/mpi_group_communicator.h"

#include <fmt/format.h>

#include "engine/comm/collective_args.h"

namespace hybrid::engine::comm {

MpiGroupCommunicator::MpiGroupCommunicator(MpiCommunicator& world, int color, int key)
    : world_(world) {
  check_color(color);
  const int world_rank = world.rank();
  world_
      .run_on_comm_thread([&](MPI_Comm parent) {
        check_mpi(MPI_Comm_split(parent, color, key, &comm_), "MPI_Comm_split");
        check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
        check_mpi(MPI_Comm_rank(comm_, &group_.rank), "MPI_Comm_rank");
        check_mpi(MPI_Comm_size(comm_, &group_.size), "MPI_Comm_size");
        world_ranks_.resize(size_t(group_.size));
        check_mpi(MPI_Allgather(&world_rank, 1, MPI_INT, world_ranks_.data(), 1, MPI_INT, comm_),
                  "MPI_Allgather (group members)");
      })
      ->wait();
  group_.comm = &comm_;
  group_.owner = this;
  set_placement(world.placement().of_ranks(world_ranks_));
  ++world_.live_groups_;
}

MpiGroupCommunicator::~MpiGroupCommunicator() {
  // After everything this group issued (the queue is in order), on the thread that owns MPI.
  world_.run_on_comm_thread([c = comm_](MPI_Comm) mutable { MPI_Comm_free(&c); })->wait();
  --world_.live_groups_;
}

std::unique_ptr<Communicator> MpiGroupCommunicator::split(int, int) {
  throw std::logic_error(
      "mpi: a group is split from the world communicator (split() of a group is not supported)");
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) {
  return std::make_unique<MpiGroupCommunicator>(*this, color, key);
}

}  // namespace hybrid::engine::comm
