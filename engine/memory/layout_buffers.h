// The allocation side of a MemoryLayout (engine/memory/layout.h): the owners
// that have a layout get their memory only through this, one TrackingAllocator
// buffer per entry, so a buffer that is not in the layout cannot be allocated
// here and the memory model, which sums the same layout, cannot miss it.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "engine/memory/layout.h"
#include "engine/memory/tracking_allocator.h"

namespace hybrid::engine {

// One allocated entry's memory (null and 0 bytes when it has none).
struct BufferView {
  void* ptr = nullptr;
  size_t size = 0;

  void* data() const { return ptr; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr);
  }
  size_t bytes() const { return size; }
  bool empty() const { return ptr == nullptr; }
};

class LayoutBuffers {
 public:
  LayoutBuffers() = default;
  // Allocates every resident entry, in layout order.
  LayoutBuffers(TrackingAllocator& alloc, MemoryLayout layout);

  const MemoryLayout& layout() const { return layout_; }

  // A resident entry's memory, by index or by name (throws when there is none).
  BufferView view(size_t i) const;
  BufferView view(std::string_view name) const { return view(layout_.index_of(name)); }
  void* data(std::string_view name) const { return view(name).data(); }
  // The same, empty when the layout has no such entry (buffers a stage omits).
  BufferView view_if_present(std::string_view name) const;

  // An on-demand entry's memory, owned by the caller and freed with the Buffer.
  Buffer allocate(size_t i) const;

 private:
  TrackingAllocator* alloc_ = nullptr;
  MemoryLayout layout_;
  std::vector<Buffer> buffers_;  // by entry; empty for on-demand entries
};

}  // namespace hybrid::engine
