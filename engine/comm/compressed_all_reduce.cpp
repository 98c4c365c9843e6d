#include "engine/comm/compressed_all_reduce.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <initializer_list>
#include <numeric>
#include <stdexcept>

#include "engine/comm/sign_bits.h"

namespace hybrid::engine::comm {

namespace {

void check_world(int world) {
  if (world < 1)
    throw std::invalid_argument(
        fmt::format("compressed all-reduce: world size must be >= 1, got {}", world));
}

// ‖x‖₂/√n, summed in double (DeepSpeed's torch sums in fp32; the two agree to
// fp32 rounding).
float rms_scale(const float* x, size_t n) {
  double sq = 0.0;
#pragma omp simd reduction(+ : sq)
  for (size_t i = 0; i < n; ++i) sq += double(x[i]) * double(x[i]);
  return float(std::sqrt(sq) / std::sqrt(double(n)));
}

// m = x − scale·sign(x), in place: what the compressed value leaves behind.
void keep_residual(float* x, size_t n, float scale) {
  for (size_t i = 0; i < n; ++i) x[i] -= scale * compressed_sign(x[i]);
}

// A tensor's place in a grouped call: its padded size P, its chunk P/W, and
// where its packed chunk sits in each rank's block of the all_to_all buffers.
struct Slot {
  size_t padded = 0, chunk = 0, chunk_bytes = 0, offset = 0;
};

// Phase 1 on the worker side: errors.worker becomes m = padded values + error,
// the signs of its chunk j go to rank j's block of `send`, and it is left
// holding the new worker error.
float compress_worker(const CompressedTensor& t, std::span<float> worker, const Slot& s,
                      uint8_t* send, size_t block) {
  float* m = worker.data();
  for (size_t i = 0; i < t.n; ++i) m[i] += t.data[i];  // the padding adds zeros
  const float scale = rms_scale(m, s.padded);
  for (size_t j = 0; j * s.chunk < s.padded; ++j)
    pack_signs(m + j * s.chunk, s.chunk, send + j * block + s.offset);
  keep_residual(m, s.padded, scale);
  return scale;
}

// Phase 1 on the server side: the average of the W ranks' compressed chunks
// (rank r's at received + r·block, its scale at scales[r·stride]) plus the
// server error, compressed again into `signs`; `server` keeps the new error.
float compress_server(const uint8_t* received, size_t block, const float* scales, size_t stride,
                      size_t world, std::span<float> server, uint8_t* signs) {
  const size_t chunk = server.size();
  constexpr size_t kTile = 512;  // values summed on the stack (chunk is a multiple of 8)
  float sum[kTile], term[kTile];
  for (size_t first = 0; first < chunk; first += kTile) {
    const size_t n = std::min(kTile, chunk - first);
    std::fill_n(sum, n, 0.0f);
    for (size_t r = 0; r < world; ++r) {
      // scale_r / W, as DeepSpeed multiplies before summing; ±weight is exact.
      unpack_signs(received + r * block + first / 8, n, scales[r * stride] * (1.0f / float(world)),
                   term);
      for (size_t i = 0; i < n; ++i) sum[i] += term[i];
    }
    for (size_t i = 0; i < n; ++i) server[first + i] = sum[i] + server[first + i];
  }
  const float scale = rms_scale(server.data(), chunk);
  pack_signs(server.data(), chunk, signs);
  keep_residual(server.data(), chunk, scale);
  return scale;
}

// Waits for every handle, even after one failed (the others still write into
// this call's buffers), then rethrows the first failure.
void wait_all(std::initializer_list<HandlePtr> handles) {
  std::exception_ptr first;
  for (const HandlePtr& h : handles) try {
      h->wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  if (first) std::rethrow_exception(first);
}

// One phase's exchange: the packed blocks (all_to_all) and the scales (all_gather).
void exchange(Communicator& comm, const std::vector<uint8_t>& send, std::vector<uint8_t>& received,
              const std::vector<float>& scales, std::vector<float>& all_scales) {
  const std::vector<size_t> counts(size_t(comm.world_size()), scales.size());
  auto blocks = comm.all_to_all_async(send.data(), received.data(), send.size() / counts.size());
  auto gathered = comm.all_gather_async(scales.data(), all_scales.data(), counts, DType::f32);
  wait_all({blocks, gathered});
}

void check_errors(const CompressionErrors& e, size_t n, int world) {
  const size_t padded = compressed_padded_size(n, world);
  if (e.worker.size() != padded || e.server.size() != padded / size_t(world))
    throw std::invalid_argument(fmt::format(
        "compressed_all_reduce: errors hold {} worker and {} server values; a tensor of {} on {} "
        "ranks needs {} and {} (CompressionErrors(n, world))",
        e.worker.size(), e.server.size(), n, world, padded, padded / size_t(world)));
}

}  // namespace

size_t compressed_padded_size(size_t n, int world) {
  check_world(world);
  const size_t w = size_t(world);
  const size_t multiple = w * (w * 8 / std::gcd(w, size_t(8)));
  return (n + multiple - 1) / multiple * multiple;
}

size_t CompressionErrors::floats(size_t n, int world) {
  const size_t padded = compressed_padded_size(n, world);
  return padded + padded / size_t(world);
}

CompressionErrors::CompressionErrors(size_t n, int world) : owned_(floats(n, world), 0.0f) {
  const size_t padded = compressed_padded_size(n, world);
  worker = std::span<float>(owned_.data(), padded);
  server = std::span<float>(owned_.data() + padded, padded / size_t(world));
}

CompressionErrors::CompressionErrors(size_t n, int world, float* storage) {
  const size_t padded = compressed_padded_size(n, world);
  worker = std::span<float>(storage, padded);
  server = std::span<float>(storage + padded, padded / size_t(world));
  reset();
}

void CompressionErrors::reset() {
  std::fill(worker.begin(), worker.end(), 0.0f);
  std::fill(server.begin(), server.end(), 0.0f);
}

void compressed_all_reduce(Communicator& comm, float* buffer, size_t n, CompressionErrors& errors) {
  check_errors(errors, n, comm.world_size());
  if (n == 0) return;
  if (!buffer) throw std::invalid_argument("compressed_all_reduce: buffer is null");
  const CompressedTensor one{buffer, n};
  compressed_all_reduce(comm, std::span(&one, 1), std::span(&errors, 1));
}

void compressed_all_reduce(Communicator& comm, std::span<const CompressedTensor> tensors,
                           std::span<CompressionErrors> errors) {
  const int world = comm.world_size();
  if (errors.size() != tensors.size())
    throw std::invalid_argument(fmt::format("compressed_all_reduce: {} tensors but {} error states",
                                            tensors.size(), errors.size()));
  const size_t w = size_t(world);
  std::vector<size_t> live;  // the non-empty tensors: an empty one sends nothing, not even a scale
  std::vector<Slot> slots;
  size_t block = 0;  // bytes of packed signs each rank sends each other rank
  for (size_t t = 0; t < tensors.size(); ++t) {
    check_errors(errors[t], tensors[t].n, world);
    if (tensors[t].n == 0) continue;
    if (!tensors[t].data)
      throw std::invalid_argument(fmt::format("compressed_all_reduce: tensor {} is null", t));
    const size_t padded = errors[t].worker.size();
    live.push_back(t);
    slots.push_back({padded, padded / w, padded / w / 8, block});
    block += slots.back().chunk_bytes;
  }
  const size_t count = live.size();
  if (count == 0) return;
  std::vector<uint8_t> send(w * block), received(w * block);
  std::vector<float> scales(count), all_scales(w * count);
  // Tensors are independent: threads take them whole (GPT-2's sizes differ ~3000×).
#pragma omp parallel for schedule(dynamic)
  for (size_t k = 0; k < count; ++k)
    scales[k] =
        compress_worker(tensors[live[k]], errors[live[k]].worker, slots[k], send.data(), block);
  exchange(comm, send, received, scales, all_scales);
#pragma omp parallel for schedule(dynamic)
  for (size_t k = 0; k < count; ++k)
    scales[k] = compress_server(received.data() + slots[k].offset, block, all_scales.data() + k,
                                count, w, errors[live[k]].server, send.data() + slots[k].offset);
  for (size_t r = 1; r < w; ++r)  // the same block for every rank
    std::copy_n(send.begin(), block, send.begin() + ptrdiff_t(r * block));
  exchange(comm, send, received, scales, all_scales);
#pragma omp parallel for schedule(dynamic)
  for (size_t k = 0; k < count; ++k) {
    const Slot& s = slots[k];
    const CompressedTensor& t = tensors[live[k]];
    for (size_t j = 0; j < w && j * s.chunk < t.n; ++j)
      unpack_signs(received.data() + j * block + s.offset, std::min(s.chunk, t.n - j * s.chunk),
                   all_scales[j * count + k], t.data + j * s.chunk);
  }
}

CommVolume compressed_all_reduce_volume(size_t n, int world) {
  const size_t padded = compressed_padded_size(n, world);
  if (padded == 0) return {};
  const uint64_t w = uint64_t(world), block = padded / w / 8;  // packed signs per rank pair
  return {2 * w * block + 2 * w * sizeof(float),
          double(w - 1) * double(2 * block + 2 * sizeof(float))};
}

CommVolume fp32_all_reduce_volume(size_t n, int world) {
  check_world(world);
  const double bytes = double(n) * sizeof(float);
  return {uint64_t(n) * sizeof(float), 2.0 * double(world - 1) / double(world) * bytes};
}

}  // namespace hybrid::engine::comm
