// The Communicator calls of the MPI world and of its groups, written once: each
// is the world communicator's *_in call among Self's ranks. Self provides
// mpi_world() (the MpiCommunicator whose thread runs it) and mpi_group() (who
// takes part: MpiCommunicator::Group).
#pragma once

#include <vector>

#include "engine/comm/communicator.h"

namespace hybrid::engine::comm {

template <class Self>
class MpiCalls : public Communicator {
 public:
  HandlePtr all_reduce_async(void* buf, size_t count, DType dt, ReduceOp op) override {
    return world().all_reduce_in(group(), buf, count, dt, op);
  }
  HandlePtr reduce_scatter_async(const void* send, void* recv, const std::vector<size_t>& counts,
                                 DType dt, ReduceOp op) override {
    return world().reduce_scatter_in(group(), send, recv, counts, dt, op);
  }
  HandlePtr all_gather_async(const void* send, void* recv, const std::vector<size_t>& counts,
                             DType dt) override {
    return world().all_gather_in(group(), send, recv, counts, dt);
  }
  HandlePtr broadcast_async(void* buf, size_t bytes, int root) override {
    return world().broadcast_in(group(), buf, bytes, root);
  }
  HandlePtr barrier_async() override { return world().barrier_in(group()); }
  HandlePtr all_to_all_async(const void* send, void* recv, size_t bytes_per_rank) override {
    return world().all_to_all_in(group(), send, recv, bytes_per_rank);
  }
  HandlePtr send_async(const void* buf, size_t bytes, int peer) override {
    return world().send_in(group(), buf, bytes, peer);
  }
  HandlePtr recv_async(void* buf, size_t bytes, int peer) override {
    return world().recv_in(group(), buf, bytes, peer);
  }
  HandlePtr send_recv_async(const void* send, size_t send_bytes, int dst, void* recv,
                            size_t recv_bytes, int src) override {
    return world().send_recv_in(group(), send, send_bytes, dst, recv, recv_bytes, src);
  }

 private:
  auto& world() { return static_cast<Self*>(this)->mpi_world(); }
  auto group() { return static_cast<Self*>(this)->mpi_group(); }
};

}  // namespace hybrid::engine::comm
