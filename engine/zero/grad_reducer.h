// Gradient bucketing and reduction for every ZeRO stage.
//
// Backward visits modules from the end of the flat space to its start, so a
// bucket is a flat range that grows downward; when the next module's gradients
// do not fit (or are not adjacent), the bucket is closed and its reduction starts
// asynchronously while backward goes on (overlap_comm), with at most two
// buckets in flight.
//   stage 0: full gradient buffer; buckets all-reduced in place (last micro-step)
//   stage 1: full gradient buffer; buckets reduce-scattered (last micro-step)
//   stage 2/3: no full buffer; parameters' gradients land in bucket-sized
//              staging buffers that are reduce-scattered every micro-step into
//              this rank's accumulated gradient shard.
// With reduce_scatter false (stages 1-2, DeepSpeed's option) buckets are
// all-reduced in place instead and each rank keeps its partition of the sum:
// twice the bus traffic, no receive buffers.
// Parameters used by several modules (tied embeddings) get their gradients in
// place (0/1) or in a dedicated buffer (2/3), reduced once backward is over.
#pragma once

#include <array>
#include <deque>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/memory/layout.h"
#include "engine/memory/layout_buffers.h"
#include "engine/memory/tracking_allocator.h"
#include "engine/model/module.h"
#include "engine/zero/partition.h"
#include "engine/zero/zero_setup.h"

namespace hybrid::engine {

class GradReducer {
 public:
  GradReducer(const ZeroSetup& setup, const ModuleTree& tree, const Partition& part,
              comm::Communicator& comm, TrackingAllocator& alloc, CommWaitRecorder* waits,
              std::function<int64_t()> clock);

  // Every buffer the reducer allocates (grads and comm), in allocation order:
  // what the constructor allocates and what the memory model sums.
  static MemoryLayout layout(const ZeroSetup& setup, const ModuleTree& tree, const Partition& part);

  // reduce: whether this micro-step's gradients are reduced now (always for
  // stages 2/3; only on the accumulation boundary for 0/1).
  void begin_backward(bool reduce);
  void before_module_backward(const Module& m);
  void* grad(const ParamSpec& p);
  void end_backward();

  // Waits for every reduction in flight and applies it.
  void finish();
  // The reduced, accumulated gradients of this rank's optimizer range
  // (stage 0: the whole space; otherwise the shard), in accum dtype.
  void* optimizer_grads() const;
  FlatRange optimizer_range() const;
  void zero_accumulated();

  int64_t bucket_capacity() const { return bucket_cap_; }

 private:
  // Staging memory of stages 2/3, with the buffer its reduce-scatter lands in.
  // Everything is allocated once, so memory is static and predictable.
  struct Bucket {
    BufferView mem;
    BufferView recv;
    int pending = -1;  // index in pending_ of the reduction reading it
  };
  struct Pending {
    comm::HandlePtr handle;
    FlatRange range;
    const void* recv = nullptr;  // stages 2/3: to add into the shard once done
    bool applied = false;
  };

  void assign(FlatRange module_range);
  void close_bucket();
  // Starts the reduction of `range`; stages 2/3 read staged_src and land in recv.
  size_t reduce_range(FlatRange range, void* staged_src, void* recv);  // index in pending_
  void apply(Pending& p);
  void wait_and_apply(size_t index);
  char* staging_address(int64_t flat) const;

  ZeroSetup setup_;
  const ModuleTree& tree_;
  const Partition& part_;
  comm::Communicator& comm_;
  kernels::Backend& backend_;
  CommWaitRecorder* waits_;
  std::function<int64_t()> clock_;
  bool staged_;
  size_t dsize_, asize_;

  LayoutBuffers mem_;   // everything below points into it
  BufferView working_;  // stages 0/1: full gradients in param dtype
  BufferView accum_;    // stages 0/1 with separate accumulation: full; stages 2/3: shard
  BufferView reduced_;  // stage 1: this rank's reduce-scatter results (the optimizer's gradients)
  std::vector<bool> shared_;             // by param id: used by several modules
  std::vector<BufferView> shared_bufs_;  // stages 2/3, by param id (empty when not shared)
  std::vector<BufferView> shared_recv_;  // stages 2/3, by param id
  std::vector<char*> staged_addr_;       // stages 2/3, by param id, for the current backward
  int64_t bucket_cap_ = 0;
  std::array<Bucket, 2> buckets_;
  int current_ = 0;
  FlatRange open_{0, 0};  // current bucket [lo, hi); empty when none is open
  bool reduce_ = false;
  std::vector<Pending> pending_;
};

}  // namespace hybrid::engine
