// See compression_errors.h.
#include "engine/optim/compression_errors.h"

#include <fmt/format.h>

namespace hybrid::engine {

std::vector<int64_t> tensor_starts(const ModuleTree& tree) {
  std::vector<int64_t> starts;
  for (const ParamSpec* p : tree.params()) starts.push_back(p->offset);
  starts.push_back(tree.param_count());
  return starts;
}

std::vector<size_t> compressed_buffers(const std::string& type,
                                       const std::vector<int64_t>& tensor_starts, int world) {
  std::vector<size_t> sizes;
  if (world < 2 || tensor_starts.empty()) return sizes;
  if (type == "OneBitLamb") {
    sizes.push_back(size_t(tensor_starts.back()));
  } else if (type == "OneBitAdam" || type == "ZeroOneAdam") {
    for (size_t t = 0; t + 1 < tensor_starts.size(); ++t)
      sizes.push_back(size_t(tensor_starts[t + 1] - tensor_starts[t]));
  }
  return sizes;
}

size_t compression_flat_floats(const std::string& type, const std::vector<int64_t>& tensor_starts,
                               int world) {
  if (type != "OneBitLamb" || tensor_starts.empty()) return 0;
  return comm::compressed_padded_size(size_t(tensor_starts.back()), world);
}

MemoryLayout compression_layout(const std::vector<size_t>& buffers, int world, size_t flat_floats) {
  MemoryLayout l;
  for (size_t i = 0; i < buffers.size(); ++i)
    l.add(fmt::format("compression_errors.{}", i),
          comm::CompressionErrors::floats(buffers[i], world), sizeof(float), MemCategory::optimizer,
          /*zeroed=*/true);
  if (const size_t bytes = buffers.empty() ? 0 : comm::compressed_exchange_bytes(buffers, world))
    l.add("compression_exchange", bytes, 1, MemCategory::comm);
  if (flat_floats) l.add("compression_flat", flat_floats, sizeof(float), MemCategory::comm);
  return l;
}

void CompressionErrorSet::track(TrackingAllocator& alloc, const std::vector<size_t>& buffers,
                                int world, size_t flat_floats) {
  errors_.clear();
  backend_ = &alloc.backend();
  memory_ = LayoutBuffers(alloc, compression_layout(buffers, world, flat_floats));
  for (size_t i = 0; i < buffers.size(); ++i)
    errors_.emplace_back(buffers[i], world, memory_.view(i).as<float>());
}

void CompressionErrorSet::make(const std::vector<size_t>& buffers, int world) {
  if (!errors_.empty()) return;
  for (size_t n : buffers) errors_.emplace_back(n, world);
}

void CompressionErrorSet::reset() {
  if (!backend_) {  // owned: host memory
    for (auto& e : errors_) e.reset();
    return;
  }
  for (size_t i = 0; i < errors_.size(); ++i) {
    const BufferView v = memory_.view(i);
    backend_->zero(v.data(), v.bytes());
  }
}

}  // namespace hybrid::engine
