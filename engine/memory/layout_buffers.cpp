#include "engine/memory/layout_buffers.h"

#include <stdexcept>

namespace hybrid::engine {

LayoutBuffers::LayoutBuffers(TrackingAllocator& alloc, MemoryLayout layout)
    : alloc_(&alloc), layout_(std::move(layout)) {
  buffers_.resize(layout_.size());
  for (size_t i = 0; i < layout_.size(); ++i) {
    const LayoutEntry& e = layout_[i];
    if (e.residency == Residency::resident)
      buffers_[i] = Buffer(alloc, size_t(e.bytes()), e.category, e.zeroed);
  }
}

BufferView LayoutBuffers::view(size_t i) const {
  if (layout_[i].residency != Residency::resident)
    throw std::logic_error("memory layout: " + layout_[i].name + " is allocated on demand");
  return {buffers_[i].data(), buffers_[i].bytes()};
}

BufferView LayoutBuffers::view_if_present(std::string_view name) const {
  const auto i = layout_.find(name);
  return i ? view(*i) : BufferView{};
}

Buffer LayoutBuffers::allocate(size_t i) const {
  const LayoutEntry& e = layout_[i];
  if (e.residency != Residency::on_demand)
    throw std::logic_error("memory layout: " + e.name + " is resident, not allocated on demand");
  return Buffer(*alloc_, size_t(e.bytes()), e.category, e.zeroed);
}

}  // namespace hybrid::engine
