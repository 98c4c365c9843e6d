// DeepSpeed's 1-bit compressed all-reduce (1-bit Adam, 0/1 Adam, 1-bit LAMB:
// deepspeed/runtime/comm/{nccl,mpi}.py `compressed_allreduce`), averaging one
// tensor over the ranks of a communicator with error feedback. Per call, on W
// ranks, for a tensor of n values padded with zeros to P =
// compressed_padded_size(n, W) and cut into W chunks of P/W:
//   1. m = padded buffer + worker error; worker scale = ‖m‖₂/√P; the worker
//      error becomes m − scale·sign(m) (sign(0) = +1);
//   2. sign(m) packed 8 per byte (kernels/sign_bits.h); chunk j goes to rank j
//      (all_to_all), the W worker scales are all-gathered;
//   3. rank j, the "server" of chunk j: s = (1/W)·Σ_r scale_r·sign_r + server
//      error; server scale = ‖s‖₂/√(P/W); server error = s − scale·sign(s);
//   4. the packed server signs go to every rank (an all_to_all of the same
//      block to each: all_gather is typed and a block may be an odd number of
//      bytes; the same bytes cross each link) and the server scales are
//      all-gathered; chunk j of the result is server_scale_j·sign_j, cut back to n.
// Every rank ends with the same result, bit for bit.
//
// Several tensors go in one call (each with its own scales and errors, the
// same values as one call per tensor): each phase is then one all_to_all of
// every tensor's chunks and one all_gather of every tensor's scale, not one
// per tensor. On a link with 1 ms latency GPT-2's 148 tensors took 600
// collectives a step, most of the step.
//
// The phases' arithmetic runs as the backend's ops (kernels/ops.h) on its
// memory: host buffers over MPI on the CPU backend, device buffers over NCCL
// on the CUDA backend (the communicator must reach the backend's memory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/comm/communicator.h"
#include "kernels/ops.h"

namespace hybrid::engine::comm {

// n rounded up to a multiple of W·lcm(W, 8) (DeepSpeed's `size * divider`,
// divider = 8W/gcd(W, 8)), so that each of the W chunks packs into whole bytes.
// 0 for n = 0; std::invalid_argument for world < 1.
size_t compressed_padded_size(size_t n, int world);

// One tensor's error-feedback state, kept across calls; zeros at first. Its
// floats are its own, or borrowed from a tracked buffer (the 1-bit optimizers'
// engine/optim/compression_errors.h, which the memory model predicts).
struct CompressionErrors {
  std::span<float> worker;  // compressed_padded_size(n, W) values
  std::span<float> server;  // worker.size() / W values: this rank's chunk

  CompressionErrors() = default;
  CompressionErrors(size_t n, int world);  // owns its floats, in host memory
  // Borrows floats(n, world) floats at `storage` (zeroed by the caller; the
  // backend's memory), which outlive it.
  CompressionErrors(size_t n, int world, float* storage);
  CompressionErrors(CompressionErrors&&) noexcept = default;  // a moved vector keeps its floats
  CompressionErrors& operator=(CompressionErrors&&) noexcept = default;
  CompressionErrors(const CompressionErrors&) = delete;
  CompressionErrors& operator=(const CompressionErrors&) = delete;

  // Worker and server floats for a tensor of n values on `world` ranks.
  static size_t floats(size_t n, int world);
  // Back to zeros (DeepSpeed resets them when a checkpoint loads); host memory
  // only: CompressionErrorSet zeroes borrowed device memory through its backend.
  void reset();
  size_t bytes() const { return (worker.size() + server.size()) * sizeof(float); }

 private:
  std::vector<float> owned_;  // empty when borrowed
};

// Averages buffer[0, n) over comm's ranks in place, compressed as above.
// Collective: every rank calls it with the same n, errors made for (n, W).
// Wrong error sizes are std::invalid_argument; n = 0 issues nothing.
void compressed_all_reduce(kernels::Backend& backend, Communicator& comm, float* buffer, size_t n,
                           CompressionErrors& errors);

// One tensor of a grouped call: values [data, data + n), averaged in place.
struct CompressedTensor {
  float* data = nullptr;
  size_t n = 0;
};
// The bytes of backend memory a grouped call over tensors of these sizes
// exchanges through: a step's calls are all alike, so the 1-bit optimizers
// allocate them once, in the memory model, with their errors.
size_t compressed_exchange_bytes(std::span<const size_t> sizes, int world);
// Averages every tensor as above, in one exchange per phase; errors[t] belongs
// to tensors[t]. Collective: every rank passes the same sizes in the same order.
// exchange_memory: compressed_exchange_bytes(sizes) bytes of the backend's
// memory, or null to allocate them for this call.
void compressed_all_reduce(kernels::Backend& backend, Communicator& comm,
                           std::span<const CompressedTensor> tensors,
                           std::span<CompressionErrors> errors, void* exchange_memory = nullptr);

// A call's communication as the tracer books it: `message` the sum of its
// records' bytes (nccl-tests' message sizes), `sent` what this rank puts on
// the wire (message × nccl-tests' bus factor, summed: profiler::bus_factor).
struct CommVolume {
  uint64_t message = 0;
  double sent = 0.0;
};
// P/8 + 4W + P/8 + 4W message bytes (two all-to-alls of packed signs, two
// all-gathers of one fp32 scale per rank); (W − 1)·(P/(4W) + 8) bytes sent.
// A grouped call books the sum of its tensors' volumes, in four records.
CommVolume compressed_all_reduce_volume(size_t n, int world);
// The same n as an fp32 all_reduce: 4n message bytes, 2(W − 1)/W·4n sent.
CommVolume fp32_all_reduce_volume(size_t n, int world);

}  // namespace hybrid::engine::comm
