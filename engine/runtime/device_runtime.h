// The device runtime: where the Engine's work runs and how its ranks talk.
//
// Owns the backend (and the CPU backend that runs an offloaded optimizer), the
// device and host memory (tracking allocators), the tracer (the clock of every
// record), the host and device communicators, the 3D-parallel topology with
// this rank's group communicators, the comm tracer that observes them all and
// the wait recorder that books blocking waits into it, and on CUDA the NVTX
// ranges and the CUPTI collector of profiled steps. Knows no model, no ZeRO
// and no optimizer: the Engine hands these what they need from here.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/config/config.h"
#include "engine/memory/tracking_allocator.h"
#include "engine/parallel/topology.h"
#include "engine/zero/zero_setup.h"
#include "kernels/ops.h"
#include "profiler/comm_tracer.h"
#include "profiler/gpu_hooks.h"
#include "profiler/tracer.h"

namespace hybrid::engine {

class DeviceRuntime {
 public:
  // Null backend: the config's device; null host communicator: MPI when launched
  // with several ranks; null device communicator: NCCL (bootstrapped over the
  // host one) on a CUDA backend, else the host communicator itself. `quiet`: no
  // informational lines on stdout.
  DeviceRuntime(const Config& cfg, std::unique_ptr<kernels::Backend> backend,
                std::unique_ptr<comm::Communicator> host_comm,
                std::unique_ptr<comm::Communicator> device_comm, bool quiet);
  ~DeviceRuntime();
  DeviceRuntime(const DeviceRuntime&) = delete;
  DeviceRuntime& operator=(const DeviceRuntime&) = delete;

  // ---- devices and memory ----------------------------------------------------
  kernels::Backend& backend() const { return *backend_; }
  bool on_cuda() const { return backend_->kind() == kernels::BackendKind::cuda; }
  bool on_cpu() const { return backend_->kind() == kernels::BackendKind::cpu; }
  const std::string& backend_note() const { return backend_note_; }
  // Waits for the device on an asynchronous one (the step timers' sync), else empty.
  std::function<void()> device_sync();
  // Device memory, with the config's budget.
  TrackingAllocator& allocator() const { return *alloc_; }
  // Host memory of the offloaded optimizer and parameters: page-locked from the
  // device backend when either offload block's pin_memory asks for it.
  TrackingAllocator& host_allocator() const { return *host_alloc_; }

  // ---- ranks and groups ------------------------------------------------------
  int rank() const { return host_comm_->rank(); }
  int world_size() const { return host_comm_->world_size(); }
  // Null unless tensor or pipeline parallelism: world = pp × dp × tp.
  const Topology* topology() const { return topology_.get(); }
  TopologyCoords coords() const;  // this rank's ({0, rank, 0} without a topology)
  int size(ParallelAxis axis) const;
  comm::Communicator& host_comm() const { return *host_comm_; }
  comm::Communicator& device_comm() const { return *device_comm_; }
  // This rank's group along `axis`: device buffers, and host values.
  comm::Communicator& group(ParallelAxis axis) const { return groups_.of(axis); }
  comm::Communicator& host_group(ParallelAxis axis) const;
  // The first and last pipeline stage (the tied embedding's gradients); null without stages.
  comm::Communicator* tied_comm() const { return tied_comm_.get(); }
  // What ZeRO reduces over: the data-parallel group (the world without a topology).
  comm::Communicator& zero_comm() const;
  comm::Communicator& zero_host_comm() const;
  // Calls and bytes of both world communicators (counted once when they are one).
  comm::Communicator::Counters comm_counters() const;
  // The same per communicator: "world", and with a topology "dp", "tp", "pp", "tied".
  std::vector<std::pair<std::string, comm::Communicator::Counters>> comm_counters_by_group() const;

  // Small collectives on host values, over the host communicator:
  double mean_over_ranks(double v);  // identity on one rank
  int64_t broadcast_from_rank0(int64_t v);
  std::vector<float> all_gather_floats(const std::vector<float>& mine);  // equal sizes, rank order
  // Sums host values over the tensor-parallel and the pipeline group (those of
  // more than one rank), each a wait the comm tracer books.
  void sum_over_model_groups(float* values, size_t n);

  // ---- recording -------------------------------------------------------------
  profiler::Tracer& tracer() { return tracer_; }
  profiler::CommTracer& comm_tracer() const { return *comm_tracer_; }
  CommWaitRecorder& waits() const { return *waits_; }
  // At each step's first micro-step: CUPTI collects while the tracer is enabled.
  void update_gpu_collection();
  // Delivers the CUPTI records of the profiled steps to the tracer and stops
  // collecting until the next profiled step. Returns the events added; 0 without a GPU.
  size_t flush_gpu_activity();
  void log(const std::string& line) const;  // rank 0's stdout, unless quiet

 private:
  class CollectorSlot;
  void make_backends(const Config& cfg, std::unique_ptr<kernels::Backend> backend);
  void setup_communicators(const Config& cfg, std::unique_ptr<comm::Communicator> host,
                           std::unique_ptr<comm::Communicator> device);
  void setup_gpu_profiling();
  void setup_topology(const ParallelConfig& par);
  void split_groups(const ParallelConfig& par);

  bool quiet_ = false;
  std::unique_ptr<kernels::Backend> backend_;
  // The CPU backend that runs the offloaded optimizer: backend_ itself on the
  // CPU, else host_backend_owned_.
  std::unique_ptr<kernels::Backend> host_backend_owned_;
  kernels::Backend* host_backend_ = nullptr;
  std::string backend_note_;
  profiler::Tracer tracer_;
  // Declared before the communicators, so that it outlives them: NCCL delivers
  // its last records while it is destroyed, also when a constructor throws.
  std::unique_ptr<profiler::CommTracer> comm_tracer_;
  std::unique_ptr<CommWaitRecorder> waits_;  // books waits into comm_tracer_
  std::unique_ptr<comm::Communicator> host_comm_;
  std::unique_ptr<comm::Communicator> device_comm_owned_;  // null when the host one serves
  comm::Communicator* device_comm_ = nullptr;
  // 3D parallelism: the topology and this rank's groups, destroyed before the
  // world. groups_ are the device communicator's (activations and their
  // gradients, ZeRO's buffers), host_groups_ the host one's (the norm and
  // overflow agreement, the loss, gather_parameters); on the CPU both
  // communicators are one object and groups_ serve both (host_groups_ empty).
  std::unique_ptr<Topology> topology_;
  GroupCommunicators groups_;
  GroupCommunicators host_groups_;
  std::unique_ptr<comm::Communicator> tied_comm_;
  std::unique_ptr<profiler::RangeListener> nvtx_;  // CUDA: NVTX range per scope
  std::unique_ptr<CollectorSlot> cupti_slot_;      // CUDA: forwards scopes to the live collector
  std::unique_ptr<profiler::GpuCollector> cupti_;  // CUDA, during profiled steps
  bool cupti_status_logged_ = false;
  std::unique_ptr<TrackingAllocator> alloc_;
  std::unique_ptr<TrackingAllocator> host_alloc_;
};

}  // namespace hybrid::engine
