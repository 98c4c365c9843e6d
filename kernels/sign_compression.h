// The arguments of the 1-bit compressed all-reduce's three phases as backend
// ops (kernels/ops.h; the algorithm: engine/comm/compressed_all_reduce.h).
// A grouped call compresses several tensors at once, each with its own
// padding, scales and error feedback, and packs every tensor's chunk j into
// one block for rank j, so that each phase is one exchange for all of them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hybrid::kernels {

// One tensor of a grouped call. Every pointer is the backend's memory.
struct SignTensor {
  float* data = nullptr;  // n values, replaced by their average
  size_t n = 0;
  // P >= n, a multiple of 8·world: world chunks of P/world values, each
  // packing into whole bytes. The values past n count as zeros.
  size_t padded = 0;
  float* worker_error = nullptr;  // P floats
  float* server_error = nullptr;  // P/world floats: the chunk this rank serves
  size_t offset = 0;              // where its packed chunk starts in each rank's block (bytes)
};

// A grouped call: the tensors (a host array, none empty), the ranks, and the
// bytes of packed signs each rank exchanges with each other rank: the sum of
// the tensors' P/world/8.
struct SignGroup {
  const SignTensor* tensors = nullptr;
  size_t count = 0;
  int world = 1;
  size_t block = 0;

  size_t chunk(size_t k) const { return tensors[k].padded / size_t(world); }
};

}  // namespace hybrid::kernels
