// One description per memory layout, as llm.c's fill_in_activation_sizes: an
// ordered list of named buffers (elements, element size, category) written by
// one function per owner — the GPT-2 activations for (B, T, model), the ZeRO
// runtime's parameters and optimizer state, the gradient reducer's gradients and
// buckets, ZeRO-3's gathered parameters, the offloaded optimizer's host memory.
// The owner allocates by walking it (engine/memory/layout_buffers.h, the only
// way those owners get memory) and the memory model predicts by summing it, so
// what is allocated and what is predicted cannot drift apart.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/memory/tracking_allocator.h"

namespace hybrid::engine {

using CategoryBytes = std::array<uint64_t, kMemCategoryCount>;

// Resident buffers live as long as their owner (allocated with it); on-demand
// ones are allocated and freed while it runs (ZeRO-3's gathered parameters, a
// diagnostic copy), so the memory model adds their peak, not their sum.
enum class Residency : uint8_t { resident, on_demand };

struct LayoutEntry {
  std::string name;
  uint64_t elements = 0;
  uint64_t element_size = 1;  // bytes per element
  MemCategory category = MemCategory::other;
  bool zeroed = false;  // zero-filled when allocated
  Residency residency = Residency::resident;
  // Activations: the module (by name) that keeps this buffer for backward;
  // empty for shared scratch, inputs and gradients (Module::activation_bytes).
  std::string owner;

  uint64_t bytes() const { return elements * element_size; }
};

class MemoryLayout {
 public:
  // Appends an entry; its index is its position, in allocation order.
  size_t add(LayoutEntry e);
  size_t add(std::string name, uint64_t elements, uint64_t element_size, MemCategory category,
             bool zeroed = false, Residency residency = Residency::resident,
             std::string owner = {});
  void append(const MemoryLayout& other);

  const std::vector<LayoutEntry>& entries() const { return entries_; }
  const LayoutEntry& operator[](size_t i) const { return entries_[i]; }
  size_t size() const { return entries_.size(); }

  std::optional<size_t> find(std::string_view name) const;
  size_t index_of(std::string_view name) const;  // throws std::out_of_range naming it

  // Bytes per category of the resident entries: what the owner holds for good.
  CategoryBytes resident_bytes() const;
  uint64_t resident_total() const;

 private:
  std::vector<LayoutEntry> entries_;
};

}  // namespace hybrid::engine
