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

class MpiGroupCommunicator final : public Communicator {
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

  HandlePtr all_reduce_async(void* buf, size_t count, DType dt, ReduceOp op) override {
    return world_.all_reduce_in(group_, buf, count, dt, op);
  }
  HandlePtr reduce_scatter_async(const void* send, void* recv, const std::vector<size_t>& counts,
                                 DType dt, ReduceOp op) override {
    return world_.reduce_scatter_in(group_, send, recv, counts, dt, op);
  }
  HandlePtr all_gather_async(const void* send, void* recv, const std::vector<size_t>& counts,
                             DType dt) override {
    return world_.all_gather_in(group_, send, recv, counts, dt);
  }
  HandlePtr broadcast_async(void* buf, size_t bytes, int root) override {
    return world_.broadcast_in(group_, buf, bytes, root);
  }
  HandlePtr barrier_async() override { return world_.barrier_in(group_); }
  HandlePtr send_async(const void* buf, size_t bytes, int peer) override {
    return world_.send_in(group_, buf, bytes, peer);
  }
  HandlePtr recv_async(void* buf, size_t bytes, int peer) override {
    return world_.recv_in(group_, buf, bytes, peer);
  }
  HandlePtr send_recv_async(const void* send, size_t send_bytes, int dst, void* recv,
                            size_t recv_bytes, int src) override {
    return world_.send_recv_in(group_, send, send_bytes, dst, recv, recv_bytes, src);
  }
  std::unique_ptr<Communicator> split(int color, int key) override;

 private:
  MpiCommunicator& world_;
  MPI_Comm comm_ = MPI_COMM_NULL;  // created and freed on the communication thread
  MpiCommunicator::Group group_;
  std::vector<int> world_ranks_;
};

}  // namespace hybrid::engine::comm
