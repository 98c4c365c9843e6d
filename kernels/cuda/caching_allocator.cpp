#include "kernels/cuda/caching_allocator.h"

#include <bit>
#include <cstdio>

namespace hybrid::kernels::cuda {

std::string format_byte_size(uint64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = double(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) v /= 1024.0, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return buf;
}

size_t CachingAllocator::size_class(size_t bytes) {
  if (bytes <= kMinBlock) return kMinBlock;
  if (bytes >= kLargeThreshold) return (bytes + kLargeRound - 1) / kLargeRound * kLargeRound;
  // Four steps per power of two: p, 1.25p, 1.5p, 1.75p, 2p.
  const size_t p = std::bit_floor(bytes);
  const size_t step = p / 4;
  return (bytes + step - 1) / step * step;
}

CachingAllocator::CachingAllocator(std::string label, UpstreamAlloc alloc, UpstreamFree free,
                                   Describe describe)
    : label_(std::move(label)),
      upstream_alloc_(std::move(alloc)),
      upstream_free_(std::move(free)),
      describe_(std::move(describe)) {
  if (!upstream_alloc_ || !upstream_free_)
    throw std::invalid_argument("CachingAllocator(" + label_ +
                                "): upstream functions are required");
}

CachingAllocator::~CachingAllocator() {
  std::lock_guard lock(mutex_);
  release_cached_locked();
  for (auto& [ptr, live] : live_) upstream_free_(const_cast<void*>(ptr));
  live_.clear();
}

void* CachingAllocator::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  const size_t cls = size_class(bytes);
  std::lock_guard lock(mutex_);
  void* p = nullptr;
  if (auto it = free_lists_.find(cls); it != free_lists_.end() && !it->second.empty()) {
    p = it->second.back();
    it->second.pop_back();
    stats_.cached -= cls;
    ++stats_.cache_hits;
  } else {
    p = upstream_alloc_(cls);
    if (!p && stats_.cached > 0) {
      // Cached blocks of other classes may be what stands in the way.
      release_cached_locked();
      p = upstream_alloc_(cls);
    }
    if (!p) {
      std::string msg = "out of memory: " + label_ + " cannot allocate " + format_byte_size(bytes) +
                        " (" + std::to_string(bytes) + " bytes, block " + format_byte_size(cls) +
                        "); " + format_byte_size(stats_.allocated) + " allocated by hybrid";
      if (describe_) msg += ", " + describe_();
      throw DeviceOutOfMemoryError(msg, bytes);
    }
    ++stats_.upstream_allocs;
  }
  live_.emplace(p, Live{cls, bytes});
  stats_.allocated += cls;
  stats_.requested += bytes;
  ++stats_.live_blocks;
  if (stats_.allocated > stats_.peak_allocated) stats_.peak_allocated = stats_.allocated;
  return p;
}

void CachingAllocator::deallocate(void* ptr) {
  if (!ptr) return;
  std::lock_guard lock(mutex_);
  auto it = live_.find(ptr);
  if (it == live_.end()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%p", ptr);
    throw std::invalid_argument("CachingAllocator(" + label_ + "): deallocate of unknown pointer " +
                                buf);
  }
  const Live live = it->second;
  live_.erase(it);
  stats_.allocated -= live.class_size;
  stats_.requested -= live.requested;
  --stats_.live_blocks;
  free_lists_[live.class_size].push_back(ptr);
  stats_.cached += live.class_size;
}

void CachingAllocator::release_cached_locked() {
  for (auto& [cls, blocks] : free_lists_) {
    for (void* p : blocks) {
      upstream_free_(p);
      ++stats_.upstream_frees;
    }
  }
  free_lists_.clear();
  stats_.cached = 0;
}

void CachingAllocator::empty_cache() {
  std::lock_guard lock(mutex_);
  release_cached_locked();
}

void CachingAllocator::reset_peak() {
  std::lock_guard lock(mutex_);
  stats_.peak_allocated = stats_.allocated;
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

size_t CachingAllocator::block_size(const void* ptr) const {
  std::lock_guard lock(mutex_);
  auto it = live_.find(ptr);
  return it == live_.end() ? 0 : it->second.class_size;
}

}  // namespace hybrid::kernels::cuda
