// ZeRO-Offload of the optimizer (zero_optimization.offload_optimizer.device
// "cpu"): this rank's fp32 master weights and optimizer state live in host
// memory (page-locked when the device backend pins and pin_memory asks for it),
// the optimizer runs on the CPU backend, and each step moves only gradients
// down and the updated working parameters up.
//
// One step, chunk by chunk over this rank's optimizer range, double-buffered:
//
//   D2H grads[k+1]  ─┐ (copy stream)
//   AdamW[k] on host ─┤ (host, OpenMP)      while H2D params[k-1] (copy stream)
//   H2D params[k]   ─┘
//
// so on a GPU the transfers of neighbouring chunks overlap the host AdamW of
// this one. With 16-bit parameters AdamW writes the 16-bit copy into a host
// staging chunk that goes up; with fp32 parameters the master chunk itself
// goes up. On the CPU backend the copies are host-to-host and synchronous: the
// same code path, with no overlap, and results identical to the on-device
// optimizer (chunks are multiples of the CPU kernels' block, so chunking never
// changes an element's arithmetic).
//
// The optimizer state is stored chunk-major (each chunk holds its
// [s0 | s1 | …] block), so the optimizer sees each chunk as a range of its own;
// master()/state() and load() use the usual global layout [s0(n) | s1(n) | …].
//
// With device "nvme" (ZeRO-Infinity) the master weights and the chunk-major
// state live in two swap files instead (engine/io/layout_files.h), and
// buffer_count host slots carry chunks through the same loop: chunk k+S−1 is
// read while chunk k is computed, and chunk k is written back after it, so the
// disk works while AdamW does. The arithmetic is the host path's, bit for bit.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/io/layout_files.h"
#include "engine/memory/layout.h"
#include "engine/memory/layout_buffers.h"
#include "engine/memory/tracking_allocator.h"
#include "engine/optim/optimizer.h"

namespace hybrid::engine {

// Where the offloaded optimizer sends updated working parameters: the device
// (DeviceParams) or ZeRO-3's offloaded partition (engine/zero/param_store.h).
class ParamDestination {
 public:
  virtual ~ParamDestination() = default;
  // Starts copying `bytes` from host memory to byte `offset` of the destination;
  // src stays untouched until wait_put(ticket) returned.
  virtual uint64_t put(uint64_t offset, const void* src, size_t bytes) = 0;
  virtual void wait_put(uint64_t ticket) = 0;
};

// Working parameters in device memory, reached through the backend's
// asynchronous host-to-device copies.
class DeviceParams final : public ParamDestination {
 public:
  DeviceParams(kernels::Backend& device, void* params) : device_(device), params_(params) {}
  uint64_t put(uint64_t offset, const void* src, size_t bytes) override {
    return device_.copy_from_host_async(static_cast<char*>(params_) + offset, src, bytes);
  }
  void wait_put(uint64_t ticket) override { device_.wait_transfer(ticket); }

 private:
  kernels::Backend& device_;
  void* params_;
};

class OptimizerOffload {
 public:
  // n: elements of this rank's optimizer range. device: the backend holding the
  // gradients. host: a host-memory TrackingAllocator whose backend (the CPU
  // backend) runs the optimizer. nvme: where the master weights and state go
  // with device "nvme" (null: host memory), carried by `slots` host buffers.
  OptimizerOffload(int64_t n, int state_floats, kernels::DType grad_dtype,
                   kernels::DType param_dtype, kernels::Backend& device, TrackingAllocator& host,
                   const io::SwapTarget* nvme = nullptr, int slots = 0);

  // Elements per pipeline chunk for a range of n: a quarter of it, rounded up
  // to a multiple of 2048 (the CPU kernels' block), between 2048 and 4 Mi.
  static int64_t chunk_elements(int64_t n);
  // Every host buffer it allocates for a range of n, in allocation order;
  // nvme_slots > 0: the master weights and state are on NVMe, carried by that
  // many slots (at most one per chunk).
  static MemoryLayout layout(int64_t n, int state_floats, kernels::DType grad_dtype,
                             kernels::DType param_dtype, int nvme_slots = 0);
  // The swap files with NVMe: master weights and chunk-major state.
  static MemoryLayout nvme_layout(int64_t n, int state_floats);
  // The host layout's bytes per category.
  struct HostBytes {
    uint64_t master = 0, optimizer = 0, staging = 0;  // staging: MemCategory::comm
  };
  static HostBytes host_bytes(int64_t n, int state_floats, kernels::DType grad_dtype,
                              kernels::DType param_dtype);

  // One optimizer step. args carries lr, step, betas, grad_scale and `first`
  // (the rest is filled in here); device_grads: n gradients in grad dtype;
  // params: receives this rank's n updated working parameters in param dtype.
  // A two-pass optimizer (Lamb) runs its first pass over every chunk as the
  // gradients come down, `reduce` sums its statistics over ranks, and the
  // second pass sends the parameters up.
  using StatsReducer = std::function<void(std::vector<double>&)>;
  void step(Optimizer& opt, OptimizerStepArgs args, const void* device_grads,
            ParamDestination& params, const StatsReducer& reduce);

  // Sets master weights and optimizer state (global layout; null: zeros) and
  // writes the derived working parameters to params.
  void load(const float* master, const float* state, ParamDestination& params);

  std::vector<float> master() const;
  std::vector<float> state() const;  // global layout
  int64_t size() const { return n_; }
  int64_t chunk() const { return chunk_; }
  bool on_nvme() const { return !files_.empty(); }
  // The swap files' sizes by category (zero without NVMe).
  CategoryBytes nvme_bytes() const { return files_.measured_bytes(); }

 private:
  int64_t chunks() const { return n_ == 0 ? 0 : (n_ + chunk_ - 1) / chunk_; }
  int64_t chunk_begin(int64_t k) const { return k * chunk_; }
  int64_t chunk_size(int64_t k) const { return std::min(chunk_, n_ - k * chunk_); }
  bool separate_params() const { return param_dtype_ != kernels::DType::f32; }
  // Chunk k's master weights and state: in the resident buffers, or (NVMe) in
  // the slot that carries it.
  float* chunk_master(int64_t k) const;
  float* chunk_state(int64_t k) const;
  // NVMe: starts reading (in) or writing (out) chunk k between its files and its slot.
  enum class Swap { in, out };
  void swap(int64_t k, Swap way);
  void wait_swap(int64_t k);  // the slot of chunk k is no longer being transferred
  // Queues chunk k's working parameters from staging slot `slot` (or the master
  // chunk for fp32 parameters).
  void push_params(int64_t k, int slot, ParamDestination& params);
  // The chunk pipeline: fn(chunk args) per chunk, with the chunk's gradients
  // fetched ahead (double-buffered) when device_grads is given, its master and
  // state swapped in and out (NVMe), and its updated parameters sent to params
  // after fn when params is given.
  void run_chunks(const OptimizerStepArgs& a, const void* device_grads, ParamDestination* params,
                  const std::function<void(OptimizerStepArgs&)>& fn);

  int64_t n_;
  int state_floats_;
  kernels::DType grad_dtype_, param_dtype_;
  kernels::Backend& device_;
  kernels::Backend& host_;
  int64_t chunk_;
  LayoutBuffers mem_;                      // the buffers below point into it
  BufferView master_;                      // fp32, n (host memory only)
  BufferView state_;                       // fp32, n × state_floats, chunk-major (host only)
  std::array<BufferView, 2> grad_stage_;   // one chunk of gradients each
  std::array<BufferView, 2> param_stage_;  // one chunk of 16-bit parameters each
  std::array<uint64_t, 2> down_{};         // transfer tickets per slot
  std::array<uint64_t, 2> up_{};
  // NVMe: the files and the slots (one chunk of master and of state each).
  io::LayoutFiles files_;
  std::vector<BufferView> swap_master_, swap_state_;
  std::vector<std::array<uint64_t, 2>> swap_tickets_;  // per slot: master, state
};

}  // namespace hybrid::engine
