// The class behind make_nccl_communicator (engine/comm/nccl_communicator.h):
// the world communicator and every group split from it are this one class, an
// ncclComm_t over a shared NcclQueue (streams, clock, records in flight).
// nccl_communicator.cpp holds the world's bootstrap and the collectives,
// nccl_split.cpp the groups. CUDA builds only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/comm/nccl_communicator.h"
#include "engine/comm/nccl_queue.h"

namespace hybrid::engine::comm {

class NcclCommunicator final : public Communicator {
 public:
  // The world: bootstraps the ncclUniqueId as `o` says and makes the queue.
  explicit NcclCommunicator(NcclOptions o);
  // A group (split()): its own communicator `comm` on the parent's queue.
  NcclCommunicator(std::shared_ptr<NcclQueue> queue, ncclComm_t comm, int rank, int size,
                   Placement placement, bool always_grouped);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  std::string name() const override { return "nccl"; }

  HandlePtr all_reduce_async(void* buf, size_t count, DType dt, ReduceOp op) override;
  HandlePtr reduce_scatter_async(const void* send, void* recv, const std::vector<size_t>& counts,
                                 DType dt, ReduceOp op) override;
  HandlePtr all_gather_async(const void* send, void* recv, const std::vector<size_t>& counts,
                             DType dt) override;
  HandlePtr broadcast_async(void* buf, size_t bytes, int root) override;
  HandlePtr barrier_async() override;
  HandlePtr all_to_all_async(const void* send, void* recv, size_t bytes_per_rank) override;
  HandlePtr send_async(const void* buf, size_t bytes, int peer) override;
  HandlePtr recv_async(void* buf, size_t bytes, int peer) override;
  HandlePtr send_recv_async(const void* send, size_t send_bytes, int dst, void* recv,
                            size_t recv_bytes, int src) override;
  // ncclCommSplit: a group on this communicator's streams, its peers group
  // ranks (engine/comm/nccl_split.cpp).
  std::unique_ptr<Communicator> split(int color, int key) override;

  // For the handles: delivers completed records, rethrows NCCL's asynchronous errors.
  void poll() { queue_->poll(); }
  void check_async_error();

 private:
  template <class Issue>
  HandlePtr launch(std::vector<CommRecord> recs, const char* label, bool host_wait, Issue&& issue);
  bool grouped(const std::vector<size_t>& counts) const;  // uneven counts need ncclGroup
  void nccl_send(const void* buf, size_t bytes, int peer);
  void nccl_recv(void* buf, size_t bytes, int peer);
  void bootstrap(const NcclOptions& o);
  void release() noexcept;

  std::shared_ptr<NcclQueue> queue_;
  ncclComm_t comm_ = nullptr;
  int rank_ = 0, world_ = 1;
  bool always_grouped_ = false;
  bool owns_mpi_ = false;  // the world only, when it initialised MPI
};

}  // namespace hybrid::engine::comm
