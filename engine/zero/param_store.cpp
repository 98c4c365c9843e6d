#include "engine/zero/param_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

namespace hybrid::engine {

using io::align_down;
using io::align_up;
using io::kDirectAlignment;

namespace {

std::string staging_name(int i) { return "params.staging." + std::to_string(i); }

}  // namespace

int64_t ParamStore::largest_slice(const ModuleTree& tree, const Partition& part) {
  int64_t largest = 0;
  for (auto* m : tree.param_modules()) {
    const auto r = tree.own_range(*m);
    for (int rank = 0; rank < part.world_size(); ++rank)
      largest = std::max(largest, FlatRange{r.begin, r.end}.intersect(part.shard(rank)).size());
  }
  return largest;
}

MemoryLayout ParamStore::host_layout(const ZeroSetup& setup, const ModuleTree& tree,
                                     const Partition& part) {
  const uint64_t d = kernels::dtype_size(setup.param_dtype);
  MemoryLayout l;
  if (setup.offload_param.device == OffloadDevice::cpu) {
    l.add("params", uint64_t(part.shard_size()), d, MemCategory::params, true);
  } else if (setup.offload_param.device == OffloadDevice::nvme) {
    // A slice starting anywhere in a page needs its aligned enclosing range: one page more.
    const uint64_t bytes = align_up(uint64_t(largest_slice(tree, part)) * d) + kDirectAlignment;
    for (int i = 0; i < setup.offload_param.buffer_count; ++i)
      l.add(staging_name(i), bytes / d, d, MemCategory::comm);
  }
  return l;
}

MemoryLayout ParamStore::nvme_layout(const ZeroSetup& setup, const Partition& part) {
  MemoryLayout l;
  if (setup.offload_param.device != OffloadDevice::nvme) return l;
  const uint64_t d = kernels::dtype_size(setup.param_dtype);
  l.add("params", io::swap_elements(uint64_t(part.shard_size()) * d, d), d, MemCategory::params);
  return l;
}

ParamStore::ParamStore(const ZeroSetup& setup, const ModuleTree& tree, const Partition& part,
                       kernels::Backend& device, TrackingAllocator& host,
                       const io::SwapTarget* nvme)
    : device_(device),
      dsize_(kernels::dtype_size(setup.param_dtype)),
      mem_(host, host_layout(setup, tree, part)) {
  if (setup.offload_param.device == OffloadDevice::cpu) {
    host_params_ = mem_.view("params").as<char>();
    return;
  }
  const int64_t slice = largest_slice(tree, part);
  if (setup.offload_param.buffer_size < slice)
    throw ConfigError(fmt::format(
        "config: zero_optimization.offload_param.buffer_size must be at least {} (the largest "
        "slice of one module's parameters a rank holds, in elements), got {}",
        slice, setup.offload_param.buffer_size));
  files_ = io::LayoutFiles(*nvme, nvme_layout(setup, part));
  for (int i = 0; i < setup.offload_param.buffer_count; ++i) {
    staging_.push_back(mem_.view(staging_name(i)).as<char>());
    free_staging_.push_back(i);
  }
}

uint64_t ParamStore::fetch(FlatRange slice, void* device_dst) {
  Fetch f;
  f.dst = device_dst;
  f.bytes = size_t(slice.size()) * dsize_;
  const uint64_t begin = uint64_t(slice.begin) * dsize_;
  if (on_nvme()) {
    if (free_staging_.empty()) throw std::logic_error("ParamStore: fetch without a free buffer");
    f.staging = free_staging_.back();
    free_staging_.pop_back();
    const uint64_t lo = align_down(begin), hi = align_up(begin + f.bytes);
    f.skip = size_t(begin - lo);
    if (f.bytes)
      f.read = files_.io().read(files_.file("params"), lo, staging_[size_t(f.staging)], hi - lo);
  } else {
    f.h2d = device_.copy_from_host_async(device_dst, host_params_ + begin, f.bytes);
  }
  const uint64_t t = next_ticket_++;
  fetches_.emplace(t, f);
  return t;
}

void ParamStore::wait_fetch(uint64_t ticket) {
  const auto it = fetches_.find(ticket);
  if (it == fetches_.end()) return;
  Fetch f = it->second;
  fetches_.erase(it);
  if (f.staging >= 0) {
    try {
      files_.io().wait(f.read);
      f.h2d = device_.copy_from_host_async(f.dst, staging_[size_t(f.staging)] + f.skip, f.bytes);
      device_.wait_transfer(f.h2d);  // the staging buffer is free once its copy is done
    } catch (...) {
      free_staging_.push_back(f.staging);
      throw;
    }
    free_staging_.push_back(f.staging);
    return;
  }
  device_.wait_transfer(f.h2d);
}

uint64_t ParamStore::put(uint64_t offset, const void* src, size_t bytes) {
  if (on_nvme()) return files_.io().write(files_.file("params"), offset, src, bytes);
  std::memcpy(host_params_ + offset, src, bytes);
  return 0;
}

void ParamStore::wait_put(uint64_t ticket) {
  if (on_nvme()) files_.io().wait(ticket);
}

void ParamStore::put_from_device(const void* device_src, size_t bytes) {
  const char* src = static_cast<const char*>(device_src);
  if (!on_nvme()) {
    device_.copy_to_host(host_params_, src, bytes);
    return;
  }
  if (free_staging_.size() != staging_.size())
    throw std::logic_error("ParamStore: partition written while parameters are fetched");
  // Page-aligned pieces through the staging buffers, each written while the next comes down.
  const size_t piece = size_t(align_down(mem_.view(staging_name(0)).bytes()));
  std::vector<uint64_t> writes(staging_.size(), 0);
  for (size_t off = 0, k = 0; off < bytes; off += piece, ++k) {
    const size_t slot = k % staging_.size(), len = std::min(piece, bytes - off);
    files_.io().wait(std::exchange(writes[slot], 0));
    device_.copy_to_host(staging_[slot], src + off, len);
    writes[slot] = files_.io().write(files_.file("params"), off, staging_[slot], len);
  }
  for (auto t : writes) files_.io().wait(t);
}

}  // namespace hybrid::engine
