#include "engine/memory/layout.h"

#include <stdexcept>

namespace hybrid::engine {

size_t MemoryLayout::add(LayoutEntry e) {
  entries_.push_back(std::move(e));
  return entries_.size() - 1;
}

size_t MemoryLayout::add(std::string name, uint64_t elements, uint64_t element_size,
                         MemCategory category, bool zeroed, Residency residency,
                         std::string owner) {
  LayoutEntry e;
  e.name = std::move(name);
  e.elements = elements;
  e.element_size = element_size;
  e.category = category;
  e.zeroed = zeroed;
  e.residency = residency;
  e.owner = std::move(owner);
  return add(std::move(e));
}

void MemoryLayout::append(const MemoryLayout& other) {
  entries_.insert(entries_.end(), other.entries_.begin(), other.entries_.end());
}

std::optional<size_t> MemoryLayout::find(std::string_view name) const {
  for (size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].name == name) return i;
  return std::nullopt;
}

size_t MemoryLayout::index_of(std::string_view name) const {
  if (auto i = find(name)) return *i;
  throw std::out_of_range("memory layout: no entry named " + std::string(name));
}

CategoryBytes MemoryLayout::resident_bytes() const {
  CategoryBytes b{};
  for (const auto& e : entries_)
    if (e.residency == Residency::resident) b[size_t(e.category)] += e.bytes();
  return b;
}

uint64_t MemoryLayout::resident_total() const {
  uint64_t t = 0;
  for (auto b : resident_bytes()) t += b;
  return t;
}

}  // namespace hybrid::engine
