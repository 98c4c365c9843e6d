#include "engine/memory/tracking_allocator.h"

#include <fmt/format.h>

#include "base/units.h"

namespace hybrid::engine {

using base::format_bytes;

std::string_view mem_category_name(MemCategory c) {
  switch (c) {
    case MemCategory::params:
      return "params";
    case MemCategory::grads:
      return "grads";
    case MemCategory::master:
      return "master";
    case MemCategory::optimizer:
      return "optimizer";
    case MemCategory::activations:
      return "activations";
    case MemCategory::comm:
      return "comm";
    case MemCategory::other:
      return "other";
    case MemCategory::kv_cache:
      return "kv_cache";
  }
  return "other";
}

OutOfMemoryError::OutOfMemoryError(std::string message, MemCategory category, uint64_t requested)
    : std::runtime_error(std::move(message)), category_(category), requested_(requested) {}

OutOfMemoryError::OutOfMemoryError(MemCategory category, uint64_t requested, uint64_t in_use,
                                   uint64_t budget)
    : std::runtime_error(fmt::format(
          "out of memory: allocating {} for {} would bring this rank to {}, over its memory "
          "budget of {} ({} in use)",
          format_bytes(requested), mem_category_name(category), format_bytes(in_use + requested),
          format_bytes(budget), format_bytes(in_use))),
      category_(category),
      requested_(requested) {}

OutOfMemoryError::OutOfMemoryError(MemCategory category, uint64_t requested, uint64_t in_use,
                                   std::string_view space, const std::string& reason)
    : std::runtime_error(
          fmt::format("out of memory: allocating {} for {} failed in {} memory with {} "
                      "in use by this rank ({})",
                      format_bytes(requested), mem_category_name(category), space,
                      format_bytes(in_use), reason)),
      category_(category),
      requested_(requested) {}

TrackingAllocator::TrackingAllocator(kernels::Backend& backend, uint64_t budget)
    : backend_(backend), budget_(budget) {}

TrackingAllocator::TrackingAllocator(kernels::Backend& host_backend,
                                     kernels::Backend& memory_source, uint64_t budget)
    : backend_(host_backend), host_source_(&memory_source), budget_(budget) {}

static void raise_peak(std::atomic<uint64_t>& peak, uint64_t value) {
  uint64_t p = peak.load(std::memory_order_relaxed);
  while (value > p && !peak.compare_exchange_weak(p, value, std::memory_order_relaxed)) {
  }
}

void* TrackingAllocator::allocate(size_t bytes, MemCategory category) {
  const uint64_t before = total_.fetch_add(bytes);
  if (budget_ && before + bytes > budget_) {
    total_.fetch_sub(bytes);
    throw OutOfMemoryError(category, bytes, before, budget_);
  }
  void* p = nullptr;
  try {
    p = host_source_ ? host_source_->allocate_host(bytes) : backend_.allocate(bytes);
  } catch (const kernels::BackendOutOfMemory& e) {
    total_.fetch_sub(bytes);
    throw OutOfMemoryError(category, bytes, before, host_source_ ? "host" : "device", e.what());
  } catch (...) {
    total_.fetch_sub(bytes);
    throw;
  }
  auto& cur = current_[size_t(category)];
  raise_peak(peak_[size_t(category)], cur.fetch_add(bytes) + bytes);
  raise_peak(total_peak_, before + bytes);
  return p;
}

void TrackingAllocator::deallocate(void* ptr, size_t bytes, MemCategory category) {
  if (!ptr) return;
  if (host_source_) {
    host_source_->free_host(ptr, bytes);
  } else {
    backend_.deallocate(ptr, bytes);
  }
  current_[size_t(category)].fetch_sub(bytes);
  total_.fetch_sub(bytes);
}

MemoryStats TrackingAllocator::stats() const {
  MemoryStats s;
  for (int i = 0; i < kMemCategoryCount; ++i) {
    s.current[i] = current_[i].load();
    s.peak[i] = peak_[i].load();
  }
  s.total_current = total_.load();
  s.total_peak = total_peak_.load();
  return s;
}

void TrackingAllocator::reset_peaks() {
  for (int i = 0; i < kMemCategoryCount; ++i) peak_[i] = current_[i].load();
  total_peak_ = total_.load();
}

Buffer::Buffer(TrackingAllocator& alloc, size_t bytes, MemCategory category, bool zeroed)
    : alloc_(&alloc), bytes_(bytes), category_(category) {
  if (bytes == 0) return;
  ptr_ = alloc.allocate(bytes, category);
  if (zeroed) alloc.backend().zero(ptr_, bytes);
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    alloc_ = o.alloc_;
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    category_ = o.category_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void Buffer::reset() {
  if (ptr_) alloc_->deallocate(ptr_, bytes_, category_);
  ptr_ = nullptr;
  bytes_ = 0;
}

}  // namespace hybrid::engine
