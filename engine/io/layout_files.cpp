#include "engine/io/layout_files.h"

namespace hybrid::engine::io {

LayoutFiles::LayoutFiles(const SwapTarget& target, MemoryLayout layout)
    : layout_(std::move(layout)), io_(target.io) {
  files_.resize(layout_.size());
  for (size_t i = 0; i < layout_.size(); ++i) {
    const LayoutEntry& e = layout_[i];
    if (e.residency == Residency::resident)
      files_[i] = std::make_unique<SwapFile>(target.dir, target.key,
                                             target.prefix + e.name + ".swp", e.bytes());
  }
}

const SwapFile& LayoutFiles::file(std::string_view name) const {
  return *files_.at(layout_.index_of(name));
}

CategoryBytes LayoutFiles::measured_bytes() const {
  CategoryBytes b{};
  for (size_t i = 0; i < files_.size(); ++i)
    if (files_[i]) b[size_t(layout_[i].category)] += files_[i]->size_on_disk();
  return b;
}

}  // namespace hybrid::engine::io
