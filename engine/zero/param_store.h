// Where ZeRO-3 keeps this rank's partition of working parameters when
// zero_optimization.offload_param moves it off the device (ZeRO-Infinity):
//   cpu:  one host buffer ("params", page-locked with pin_memory);
//   nvme: one swap file under nvme_path, read through buffer_count host
//         staging buffers (each holds the largest slice of one module's
//         parameters that any rank owns).
// The gatherer (engine/zero/param_gatherer.h) fetches a module's slice of the
// partition straight into the module's gathered buffer on the device and
// all-gathers in place; the offloaded optimizer puts the updated parameters
// back chunk by chunk (ParamDestination). Reads of the file start when the
// gatherer prefetches, so they overlap the compute of the modules before.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "engine/io/layout_files.h"
#include "engine/memory/layout.h"
#include "engine/memory/layout_buffers.h"
#include "engine/memory/tracking_allocator.h"
#include "engine/model/module.h"
#include "engine/zero/optimizer_offload.h"
#include "engine/zero/partition.h"
#include "engine/zero/zero_setup.h"

namespace hybrid::engine {

class ParamStore final : public ParamDestination {
 public:
  // host: the host allocator (pinned per pin_memory); nvme: where the file
  // goes with device "nvme" (null for "cpu").
  ParamStore(const ZeroSetup& setup, const ModuleTree& tree, const Partition& part,
             kernels::Backend& device, TrackingAllocator& host, const io::SwapTarget* nvme);

  // Host buffers: the partition ("cpu") or the staging buffers ("nvme").
  static MemoryLayout host_layout(const ZeroSetup& setup, const ModuleTree& tree,
                                  const Partition& part);
  // The swap file ("nvme"; empty for "cpu").
  static MemoryLayout nvme_layout(const ZeroSetup& setup, const Partition& part);
  // Elements of the largest slice of one module's parameters that a rank owns.
  static int64_t largest_slice(const ModuleTree& tree, const Partition& part);

  bool on_nvme() const { return !files_.empty(); }

  // ---- the gatherer's side ----------------------------------------------------
  // Whether fetch() can start now (a staging buffer is free; always in host memory).
  bool can_fetch() const { return !on_nvme() || !free_staging_.empty(); }
  // Starts bringing elements [slice.begin, slice.end) of this rank's partition
  // to device memory at device_dst.
  uint64_t fetch(FlatRange slice, void* device_dst);
  // Completes the fetch: the data at device_dst is visible to work queued after.
  void wait_fetch(uint64_t ticket);

  // ---- the optimizer's side (bytes of the partition) -----------------------------
  uint64_t put(uint64_t offset, const void* src, size_t bytes) override;
  void wait_put(uint64_t ticket) override;
  // The whole partition from device memory (the on-device optimizer's output):
  // down into host memory, or through the staging buffers into the file.
  void put_from_device(const void* device_src, size_t bytes);

  // The swap file's size (zero for "cpu").
  CategoryBytes nvme_bytes() const { return files_.measured_bytes(); }

 private:
  struct Fetch {
    uint64_t read = 0;  // I/O ticket (nvme)
    int staging = -1;   // staging buffer index (nvme)
    size_t skip = 0;    // bytes from the staging buffer's start to the slice
    size_t bytes = 0;
    void* dst = nullptr;
    uint64_t h2d = 0;  // the backend's transfer ticket
  };

  kernels::Backend& device_;
  size_t dsize_;
  LayoutBuffers mem_;
  char* host_params_ = nullptr;  // "cpu"
  std::vector<char*> staging_;   // "nvme"
  std::vector<int> free_staging_;
  io::LayoutFiles files_;
  std::unordered_map<uint64_t, Fetch> fetches_;
  uint64_t next_ticket_ = 1;
};

}  // namespace hybrid::engine
