// Where parameters, gradients, master weights and optimizer state live for a
// given ZeRO stage, and the optimizer step over this rank's partition.
//
//            16-bit params   gradients            fp32 master + optimizer state
//   stage 0  full            full, all-reduced    full (replicated)
//   stage 1  full            full, reduce-scat.   shard
//   stage 2  full            shard (+ buckets)    shard
//   stage 3  shard (+ live)  shard (+ buckets)    shard
//
// With fp32 parameters there is no separate master copy: the optimizer updates
// the parameters (or their shard) in place.
//
// With the optimizer offloaded (engine/zero/optimizer_offload.h) the master
// weights (fp32 parameters included) and the optimizer state of the optimizer's
// range live in host memory (or NVMe swap files) instead, and the optimizer runs
// on the CPU. With offload_param (stage 3) the partition of working parameters
// lives in host memory or an NVMe swap file too (engine/zero/param_store.h),
// fetched by the gatherer before each all-gather.
//
// Two communicators: `comm` carries the big device buffers (gradient buckets,
// parameter all-gathers: NCCL on GPUs), `host_comm` the small host values (the
// norm/overflow agreement, full_master's gather). On the CPU both are one object.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/io/async_io.h"
#include "engine/memory/layout.h"
#include "engine/memory/layout_buffers.h"
#include "engine/memory/tracking_allocator.h"
#include "engine/model/execution_context.h"
#include "engine/optim/optimizer.h"
#include "engine/zero/grad_reducer.h"
#include "engine/zero/optimizer_offload.h"
#include "engine/zero/param_gatherer.h"
#include "engine/zero/param_store.h"
#include "engine/zero/partition.h"

namespace hybrid::engine {

struct WeightedRange {
  FlatRange range;
  double weight = 1.0;
};

struct GradSummary {
  double sum_squares = 0.0;  // of the accumulated (scaled, rank-summed) gradients, all ranks
  bool overflow = false;     // any inf/NaN on any rank
};

class ZeroRuntime final : public ParamAccess, public ModuleHooks {
 public:
  // offload: the host allocator for an offloaded optimizer or parameter
  // partition, or null. io_observer receives the NVMe swap files' reads and writes.
  ZeroRuntime(const ZeroSetup& setup, const ModuleTree& tree, comm::Communicator& comm,
              comm::Communicator& host_comm, TrackingAllocator& alloc, TrackingAllocator* offload,
              int optimizer_state_floats, CommWaitRecorder* waits, std::function<int64_t()> clock,
              io::AsyncIo::Observer io_observer = {});
  ~ZeroRuntime() override;

  // The runtime's own buffers (working parameters, fp32 master weights and
  // optimizer state on the device unless offloaded, and grads_to_host's
  // on-demand copy), in allocation order; the reducer, the gatherer and the
  // offloaded optimizer have their own layouts.
  static MemoryLayout layout(const ZeroSetup& setup, const Partition& part,
                             int optimizer_state_floats, bool offloaded);

  const ZeroSetup& setup() const { return setup_; }
  const Partition& partition() const { return part_; }
  bool optimizer_offloaded() const { return offload_ != nullptr; }
  bool params_offloaded() const { return store_ != nullptr; }
  // Bytes of this rank's NVMe swap files by category, as the filesystem reports them.
  CategoryBytes nvme_bytes() const;

  // ParamAccess
  const void* param(const ParamSpec& p) override;
  void* grad(const ParamSpec& p) override { return reducer_->grad(p); }
  // ModuleHooks
  void before_forward(const Module& m) override;
  void after_forward(const Module& m) override;
  void before_backward(const Module& m) override;
  void after_backward(const Module& m) override;
  // A recomputed forward belongs to the backward pass: ZeRO-3 gathers for it in
  // the backward order (its prefetch sees recomputation and backward as one).
  void before_recompute(const Module& m) override;
  void after_recompute(const Module& m) override;

  void end_forward();
  void begin_backward(bool reduce) { reducer_->begin_backward(reduce); }
  void end_backward();
  // Waits for every gradient reduction in flight and applies it (the end of the
  // accumulation boundary's backward).
  void finish_reductions() { reducer_->finish(); }

  // At the accumulation boundary: completes all reductions and measures the
  // gradients (norm, overflow) across ranks. `weights` (disjoint) weigh ranges
  // in the norm, 1 elsewhere: 0 keeps a range out of the norm and the overflow
  // check (a pipeline's tied parameters, counted on the stage that owns them),
  // 1/n counts a tensor-parallel replica held alike by n ranks once.
  GradSummary finish_gradients(std::vector<WeightedRange> weights = {});
  // Pipeline parallelism's tied parameters: sums the reduced gradients of
  // `range` (its part in this rank's optimizer range) over `group`, the stages
  // that share them. After finish_reductions, before finish_gradients.
  void all_reduce_grads(FlatRange range, comm::Communicator& group);
  // Runs the optimizer over this rank's range (args gives lr, step, betas and
  // grad_scale; the rest is filled in here). A two-pass optimizer's statistics
  // are summed over the ranks in between. sync_working_params then brings every
  // rank's working parameters up to date (all-gather for stages 1/2, persistent
  // refresh for 3): two calls, so that each can be timed.
  void apply_optimizer(Optimizer& opt, OptimizerStepArgs args);
  void sync_working_params();
  void zero_grads() { reducer_->zero_accumulated(); }

  // The flat range this rank's optimizer owns (stage 0: everything).
  FlatRange optimizer_range() const { return reducer_->optimizer_range(); }
  // Host copies of this rank's fp32 master weights and optimizer state
  // (optimizer_range().size() and × state floats).
  std::vector<float> master_to_host() const;
  std::vector<float> state_to_host() const;
  // Sets master weights (and derived working parameters) and optimizer state for
  // this rank's range from host values; collective for stages 1–3.
  void load_from_host(const float* master, const float* state);
  // This rank's reduced gradients over optimizer_range() in fp32, as the
  // optimizer would see them before unscaling (call after finish_gradients).
  std::vector<float> grads_to_host() const;
  // Every parameter in fp32, gathered from all ranks over the host communicator
  // (collective).
  std::vector<float> full_master();

  int64_t bucket_capacity() const { return reducer_->bucket_capacity(); }
  ParamGatherer* gatherer() { return gatherer_.get(); }

 private:
  void* own_params() const;  // this rank's optimizer range inside params_ (on the device)
  ParamDestination& param_destination();  // where the offloaded optimizer puts parameters
  float* master_ptr() const;              // on the device (not offloaded)
  void* param_out_ptr() const;
  void gather_params();  // stages 1/2: all-gather updated shards in allgather buckets
  // Sums a two-pass optimizer's statistics over ranks that own different ranges.
  void reduce_optimizer_stats(std::vector<double>& stats);

  ZeroSetup setup_;
  const ModuleTree& tree_;
  Partition part_;
  comm::Communicator& comm_;
  comm::Communicator& host_comm_;
  kernels::Backend& backend_;
  CommWaitRecorder* waits_;
  std::function<int64_t()> clock_;
  int state_floats_;
  size_t dsize_;

  LayoutBuffers mem_;  // the three below point into it
  BufferView params_;  // full (stages 0–2) or shard (3), param dtype
  BufferView master_;  // fp32, optimizer range; empty when params are fp32 or offloaded
  BufferView state_;  // fp32 optimizer state, optimizer range × state_floats; empty when offloaded
  std::unique_ptr<OptimizerOffload> offload_;
  std::unique_ptr<ParamStore> store_;  // offload_param: the partition off the device
  std::unique_ptr<DeviceParams> device_params_;
  std::unique_ptr<GradReducer> reducer_;
  std::unique_ptr<ParamGatherer> gatherer_;
  // NVMe file I/O; declared last, so it is destroyed first: no transfer outlives
  // the swap files and buffers of the owners above.
  std::unique_ptr<io::AsyncIo> io_;
};

}  // namespace hybrid::engine
