// Counts every byte the engine holds, per category, and enforces an optional
// per-rank budget. Exceeding the budget raises OutOfMemoryError naming the
// category, and so does a backend that runs out of memory itself
// (kernels::BackendOutOfMemory, e.g. the CUDA caching allocator's), so memory
// limits and OOM pruning behave the same on the CPU (budget) and the GPU (real
// device memory).
//
// An engine has two: one for the backend's (device) memory, and one for host
// memory (the offloaded optimizer's master weights and moments), whose memory
// comes from the device backend's allocate_host (page-locked on CUDA) and which
// the CPU backend computes on.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "kernels/ops.h"

namespace hybrid::engine {

enum class MemCategory : uint8_t {
  params = 0,       // 16-bit (or fp32) working parameters, gathered ZeRO-3 params included
  grads = 1,        // gradients (full, or this rank's partition)
  master = 2,       // fp32 master weights
  optimizer = 3,    // optimizer moments
  activations = 4,  // activations saved for backward and their gradients
  comm = 5,         // communication buckets and staging buffers
  other = 6,
  kv_cache = 7,  // generation's key/value cache (engine/generate/generator.h)
};
constexpr int kMemCategoryCount = 8;
std::string_view mem_category_name(MemCategory c);
// Whether a report lists category c holding `bytes`: training's categories
// always, the key/value cache only when a run held one, so training runs'
// stored rows and summaries stay those from before the cache had a category.
constexpr bool listed_category(MemCategory c, uint64_t bytes) {
  return bytes > 0 || c != MemCategory::kv_cache;
}

class OutOfMemoryError : public std::runtime_error {
 public:
  // The budget would be exceeded.
  OutOfMemoryError(MemCategory category, uint64_t requested, uint64_t in_use, uint64_t budget);
  // The backend itself could not provide the memory; `reason` is what it said.
  OutOfMemoryError(MemCategory category, uint64_t requested, uint64_t in_use,
                   std::string_view space, const std::string& reason);
  // The memory model predicts more than the budget before anything is allocated;
  // `category` is the largest, `requested` the predicted total.
  OutOfMemoryError(std::string message, MemCategory category, uint64_t requested);
  MemCategory category() const { return category_; }
  uint64_t requested() const { return requested_; }

 private:
  MemCategory category_;
  uint64_t requested_;
};

struct MemoryStats {
  std::array<uint64_t, kMemCategoryCount> current{};
  std::array<uint64_t, kMemCategoryCount> peak{};
  uint64_t total_current = 0;
  uint64_t total_peak = 0;
};

class TrackingAllocator {
 public:
  // Device memory: budget 0 is unlimited; backend allocates, zeroes and computes.
  TrackingAllocator(kernels::Backend& backend, uint64_t budget);
  // Host memory: allocate_host/free_host of `memory_source` (page-locked when
  // it pins), zeroed and computed on by `host_backend` (the CPU backend).
  TrackingAllocator(kernels::Backend& host_backend, kernels::Backend& memory_source,
                    uint64_t budget);

  MemoryStats stats() const;
  uint64_t budget() const { return budget_; }
  void reset_peaks();
  kernels::Backend& backend() { return backend_; }
  bool host_memory() const { return host_source_ != nullptr; }
  // Whether host memory is page-locked (false for device memory).
  bool pinned() const { return host_source_ && host_source_->pins_host_memory(); }

 private:
  friend class Buffer;  // the only way to allocate: a Buffer, made by LayoutBuffers
  void* allocate(size_t bytes, MemCategory category);
  void deallocate(void* ptr, size_t bytes, MemCategory category);

  kernels::Backend& backend_;
  kernels::Backend* host_source_ = nullptr;
  uint64_t budget_;
  std::array<std::atomic<uint64_t>, kMemCategoryCount> current_{};
  std::array<std::atomic<uint64_t>, kMemCategoryCount> peak_{};
  std::atomic<uint64_t> total_{0};
  std::atomic<uint64_t> total_peak_{0};
};

// An owned allocation from a TrackingAllocator, released on destruction. Only a
// LayoutBuffers makes one (engine/memory/layout_buffers.h): memory that is not
// in a layout cannot be allocated, so the memory model cannot miss it.
class Buffer {
 public:
  Buffer() = default;
  ~Buffer() { reset(); }
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void reset();
  void* data() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }
  bool empty() const { return ptr_ == nullptr; }
  MemCategory category() const { return category_; }

 private:
  friend class LayoutBuffers;
  Buffer(TrackingAllocator& alloc, size_t bytes, MemCategory category, bool zeroed);

  TrackingAllocator* alloc_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  MemCategory category_ = MemCategory::other;
};

}  // namespace hybrid::engine
