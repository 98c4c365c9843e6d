// The 1-bit compressed average of a flat range of the parameter space over the
// data-parallel ranks, each parameter tensor compressed on its own (as DeepSpeed
// does: its own scales, its error feedback kept across calls), all of them in
// one grouped compressed all-reduce (one exchange per phase). The masked ranges (gradients always
// zero) and the padding past the last tensor come out as 0, as DeepSpeed's exp_avg_mask makes them.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/comm/compressed_all_reduce.h"
#include "engine/optim/compression_errors.h"
#include "engine/optim/optimizer.h"

namespace hybrid::engine {

class TensorwiseCompressedAverage {
 public:
  // tensor_starts as for make_lamb: every tensor's flat offset, then the count.
  TensorwiseCompressedAverage(std::vector<int64_t> tensor_starts, comm::Communicator& comm,
                              ZeroGradientRanges masked);

  // values = [first, first + n) of the parameter space, averaged in place. On
  // one rank the average is the values themselves (only the mask applies).
  // Collective: every rank calls it with the same range.
  // values: the backend's memory, where the errors are too.
  void average(kernels::Backend& backend, float* values, int64_t first, size_t n);
  // Errors back to zero: DeepSpeed resets them when a checkpoint loads, and
  // 0/1 Adam when its variance freezes.
  void reset_errors() { errors_.reset(); }
  // Every tensor's errors in `alloc`'s memory from now on (whole tensors: a
  // step covers all of them, ZeRO stage 0); nothing on one rank.
  void track_errors_in(TrackingAllocator& alloc);
  int world() const { return comm_.world_size(); }

 private:
  std::vector<int64_t> starts_;
  comm::Communicator& comm_;
  ZeroGradientRanges masked_;
  CompressionErrorSet errors_;  // one per tensor: tracked, or made at the first call
};

}  // namespace hybrid::engine
