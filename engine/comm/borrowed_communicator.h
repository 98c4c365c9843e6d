// Another owner's view of a communicator it does not own: every collective and
// split() goes to `inner`, which must outlive it. An engine built over the
// ranks of another one (the generation replica of
// hybrid_engine.inference_tp_size) takes one, since only one MPI communicator
// may exist per process and a group of it cannot be split again. Records and
// counters stay with `inner` and its observer; the groups split through it are
// inner's groups, observed by whoever holds them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/comm/communicator.h"

namespace hybrid::engine::comm {

class BorrowedCommunicator final : public Communicator {
 public:
  explicit BorrowedCommunicator(Communicator& inner) : inner_(inner) {}

  int rank() const override { return inner_.rank(); }
  int world_size() const override { return inner_.world_size(); }
  std::string name() const override { return inner_.name(); }
  HandlePtr all_reduce_async(void* buf, size_t count, DType dt, ReduceOp op) override {
    return inner_.all_reduce_async(buf, count, dt, op);
  }
  HandlePtr reduce_scatter_async(const void* send, void* recv, const std::vector<size_t>& counts,
                                 DType dt, ReduceOp op) override {
    return inner_.reduce_scatter_async(send, recv, counts, dt, op);
  }
  HandlePtr all_gather_async(const void* send, void* recv, const std::vector<size_t>& counts,
                             DType dt) override {
    return inner_.all_gather_async(send, recv, counts, dt);
  }
  HandlePtr broadcast_async(void* buf, size_t bytes, int root) override {
    return inner_.broadcast_async(buf, bytes, root);
  }
  HandlePtr barrier_async() override { return inner_.barrier_async(); }
  HandlePtr all_to_all_async(const void* send, void* recv, size_t bytes_per_rank) override {
    return inner_.all_to_all_async(send, recv, bytes_per_rank);
  }
  HandlePtr send_async(const void* buf, size_t bytes, int peer) override {
    return inner_.send_async(buf, bytes, peer);
  }
  HandlePtr recv_async(void* buf, size_t bytes, int peer) override {
    return inner_.recv_async(buf, bytes, peer);
  }
  HandlePtr send_recv_async(const void* send, size_t send_bytes, int dst, void* recv,
                            size_t recv_bytes, int src) override {
    return inner_.send_recv_async(send, send_bytes, dst, recv, recv_bytes, src);
  }
  std::unique_ptr<Communicator> split(int color, int key) override {
    return inner_.split(color, key);
  }

 private:
  Communicator& inner_;
};

}  // namespace hybrid::engine::comm
