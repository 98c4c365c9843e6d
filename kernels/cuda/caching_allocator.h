// A caching allocator for device memory: freed blocks go to per-size-class free
// lists and are handed out again without cudaMalloc/cudaFree (both synchronise
// the device). Generic over its upstream (cudaMalloc/cudaFree in the backend), so
// the caching logic is tested on the host with real host memory.
//
// Size classes: below 2 MiB, four classes per power of two (≤ 25% slack,
// ≥ 512 B); from 2 MiB up, multiples of 2 MiB (the driver's page size: big flat
// buffers waste less than 2 MiB). Every class is its own class (a fixed point). Only exact-class
// blocks are reused; no splitting.
//
// Blocks are stream-ordered on the compute stream: a block freed by the host
// after queuing work that uses it may be reused by later work on the same
// stream. Memory used on another stream must be freed only after that stream's
// work is known complete (the communicator's handles guarantee it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/ops.h"

namespace hybrid::kernels::cuda {

// Device memory exhausted even after the cache was released. The message names
// the requested size and the allocator's state. A BackendOutOfMemory, so the
// engine's tracking allocator reports it as an out-of-memory of a category.
class DeviceOutOfMemoryError : public BackendOutOfMemory {
 public:
  using BackendOutOfMemory::BackendOutOfMemory;
};

struct AllocatorStats {
  uint64_t allocated = 0;  // bytes in live blocks (class sizes)
  uint64_t requested = 0;  // bytes the callers asked for in live blocks
  uint64_t cached = 0;     // bytes in free lists
  uint64_t peak_allocated = 0;
  uint64_t reserved() const { return allocated + cached; }
  uint64_t upstream_allocs = 0;  // cudaMalloc calls
  uint64_t upstream_frees = 0;   // cudaFree calls
  uint64_t cache_hits = 0;       // allocations served from a free list
  uint64_t live_blocks = 0;
};

std::string format_byte_size(uint64_t bytes);  // "1.50 GiB", "512 B"

class CachingAllocator {
 public:
  using UpstreamAlloc = std::function<void*(size_t)>;  // nullptr when out of memory
  using UpstreamFree = std::function<void(void*)>;
  using Describe = std::function<std::string()>;  // extra OOM context (device free/total)

  CachingAllocator(std::string label, UpstreamAlloc alloc, UpstreamFree free,
                   Describe describe = {});
  ~CachingAllocator();  // returns every block, live or cached, to the upstream
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  static constexpr size_t kLargeThreshold = size_t(2) << 20;
  static constexpr size_t kLargeRound = size_t(2) << 20;
  static constexpr size_t kMinBlock = 512;
  static size_t size_class(size_t bytes);

  // bytes == 0 returns nullptr. Throws DeviceOutOfMemoryError.
  void* allocate(size_t bytes);
  // Unknown pointers throw std::invalid_argument; nullptr is ignored.
  void deallocate(void* ptr);
  // Returns every cached block to the upstream.
  void empty_cache();
  void reset_peak();

  AllocatorStats stats() const;
  // Class size of a live block (0 when unknown).
  size_t block_size(const void* ptr) const;

 private:
  void release_cached_locked();

  std::string label_;
  UpstreamAlloc upstream_alloc_;
  UpstreamFree upstream_free_;
  Describe describe_;
  mutable std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_lists_;  // class size → blocks
  struct Live {
    size_t class_size;
    size_t requested;
  };
  std::unordered_map<const void*, Live> live_;
  AllocatorStats stats_;
};

}  // namespace hybrid::kernels::cuda
