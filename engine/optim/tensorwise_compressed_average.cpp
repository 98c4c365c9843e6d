// See tensorwise_compressed_average.h.
#include "engine/optim/tensorwise_compressed_average.h"

#include <algorithm>

namespace hybrid::engine {

TensorwiseCompressedAverage::TensorwiseCompressedAverage(std::vector<int64_t> tensor_starts,
                                                         comm::Communicator& comm,
                                                         ZeroGradientRanges masked)
    : starts_(std::move(tensor_starts)), comm_(comm), masked_(std::move(masked)) {}

void TensorwiseCompressedAverage::track_errors_in(TrackingAllocator& alloc) {
  std::vector<size_t> sizes;
  for (size_t t = 0; t + 1 < starts_.size(); ++t)
    sizes.push_back(size_t(starts_[t + 1] - starts_[t]));
  if (comm_.world_size() > 1) errors_.track(alloc, sizes, comm_.world_size());
}

void TensorwiseCompressedAverage::average(kernels::Backend& backend, float* values, int64_t first,
                                          size_t n) {
  const int64_t last = first + int64_t(n);
  const size_t tensors = starts_.size() - 1;
  const int ranks = comm_.world_size();
  // Tensor t's part of [first, last), empty where they do not meet.
  const auto part = [&](size_t t) {
    return std::pair{std::max(starts_[t], first), std::min(starts_[t + 1], last)};
  };
  if (ranks > 1) {
    std::vector<comm::CompressedTensor> parts(tensors);
    std::vector<size_t> sizes(tensors);
    for (size_t t = 0; t < tensors; ++t) {
      const auto range = part(t);
      if (range.first < range.second)
        parts[t] = {values + (range.first - first), size_t(range.second - range.first)};
      sizes[t] = parts[t].n;
    }
    errors_.make(sizes, ranks);  // when untracked, at the first call
    comm::compressed_all_reduce(backend, comm_, parts, errors_.all(), errors_.exchange());
  }
  const auto zero = [&](int64_t b, int64_t e) {
    b = std::max(b, first), e = std::min(e, last);
    if (b < e) backend.zero(values + (b - first), size_t(e - b) * sizeof(float));
  };
  for (const auto& range : masked_) zero(range.first, range.second);
  zero(starts_.back(), last);
}

}  // namespace hybrid::engine
