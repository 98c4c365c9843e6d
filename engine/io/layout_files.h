// The NVMe side of a MemoryLayout (engine/memory/layout.h), as LayoutBuffers is
// the memory side: an owner whose buffers live on NVMe describes them in one
// layout, and this creates one swap file per entry, so the memory model, which
// sums the same layout, predicts the files' sizes to the byte.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/io/async_io.h"
#include "engine/io/swap_file.h"
#include "engine/memory/layout.h"

namespace hybrid::engine::io {

// Where an owner's swap files go and who reads and writes them.
struct SwapTarget {
  std::string dir;     // the config's nvme_path
  std::string key;     // that config key, for errors ("zero_optimization.offload_param.nvme_path")
  std::string prefix;  // unique per process and rank: "hybrid-<pid>-r<rank>-"
  AsyncIo* io = nullptr;
};

// Entry sizes rounded up to the direct-I/O alignment: what a swap file of `bytes` takes.
inline uint64_t swap_elements(uint64_t bytes, uint64_t element_size) {
  return align_up(bytes) / element_size;
}

class LayoutFiles {
 public:
  LayoutFiles() = default;
  // One file per resident entry, named prefix + entry name + ".swp".
  LayoutFiles(const SwapTarget& target, MemoryLayout layout);

  const MemoryLayout& layout() const { return layout_; }
  const SwapFile& file(std::string_view name) const;
  AsyncIo& io() const { return *io_; }
  bool empty() const { return files_.empty(); }
  // The files' sizes as the filesystem reports them, by category.
  CategoryBytes measured_bytes() const;

 private:
  MemoryLayout layout_;
  AsyncIo* io_ = nullptr;
  std::vector<std::unique_ptr<SwapFile>> files_;  // by entry
};

}  // namespace hybrid::engine::io
