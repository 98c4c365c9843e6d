// A group of an MpiCommunicator's ranks (split()): its own MPI communicator
// (MPI_Comm_split), issued through the world communicator's thread and queue,
// so world and group calls keep one order. Its records carry the group's size
// and the link class of its own ranks' hosts (a tensor-parallel group inside
// one host is intra_host even when the world spans hosts).
#pragma once

#include <mpi.h>

#include <vector>

#include "engine/comm/mpi_communicator.h"

namespace hybrid::engine::comm {

class MpiGroupCommunicator final : public MpiCalls<MpiGroupCommunicator> {
 public:
  // Collective over the world: every rank calls it with its color and key.
  MpiGroupCommunicator(MpiCommunicator& world, int color, int key);
  ~MpiGroupCommunicator() override;
  MpiGroupCommunicator(const MpiGroupCommunicator&) = delete;
  MpiGroupCommunicator& operator=(const MpiGroupCommunicator&) = delete;

  int rank() const override { return group_.rank; }
  int world_size() const override { return group_.size; }
  std::string name() const override { return "mpi"; }
  // The world ranks of this group's members, in group rank order.
  const std::vector<int>& world_ranks() const { return world_ranks_; }

  // The collectives and transfers (MpiCalls) run among the group's ranks.
  std::unique_ptr<Communicator> split(int color, int key) override;

 private:
  friend class MpiCalls<MpiGroupCommunicator>;
  MpiCommunicator& mpi_world() { return world_; }
  const MpiCommunicator::Group& mpi_group() const { return group_; }

  MpiCommunicator& world_;
  MPI_Comm comm_ = MPI_COMM_NULL;  // created and freed on the communication thread
  MpiCommunicator::Group group_;
  std::vector<int> world_ranks_;
};

}  // namespace hybrid::engine::comm
