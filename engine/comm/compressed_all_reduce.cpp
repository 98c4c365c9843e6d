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
  for (size_t i = 0; i < n; ++i) sq += double(x[i]) * double(x[i]);
  return float(std::sqrt(sq) / std::sqrt(double(n)));
}

// m = x − scale·sign(x), in place: what the compressed value leaves behind.
void keep_residual(float* x, size_t n, float scale) {
  for (size_t i = 0; i < n; ++i) x[i] -= scale * compressed_sign(x[i]);
}

// Phase 1 on the worker side: errors.worker becomes m = padded buffer + error,
// its signs go to `signs`, and it is left holding the new worker error.
float compress_worker(const float* buffer, size_t n, std::span<float> worker,
                      std::vector<uint8_t>& signs) {
  float* m = worker.data();
  for (size_t i = 0; i < n; ++i) m[i] += buffer[i];  // the padding adds zeros
  const float scale = rms_scale(m, worker.size());
  pack_signs(m, worker.size(), signs.data());
  keep_residual(m, worker.size(), scale);
  return scale;
}

// Phase 1 on the server side: the average of the W ranks' compressed chunks
// plus the server error, compressed again; `server` keeps the new error.
float compress_server(const std::vector<uint8_t>& chunks, const std::vector<float>& scales,
                      std::span<float> server, std::vector<uint8_t>& signs) {
  const size_t chunk = server.size(), chunk_bytes = chunk / 8, world = scales.size();
  std::vector<float> weight(world);  // scale_r / W, as DeepSpeed multiplies before summing
  for (size_t r = 0; r < world; ++r) weight[r] = scales[r] * (1.0f / float(world));
  for (size_t i = 0; i < chunk; ++i) {
    float avg = 0.0f;
    for (size_t r = 0; r < world; ++r)
      avg += weight[r] * sign_of_bit(chunks.data() + r * chunk_bytes, i);
    server[i] = avg + server[i];
  }
  const float scale = rms_scale(server.data(), chunk);
  pack_signs(server.data(), chunk, signs.data());
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
  const int world = comm.world_size();
  check_errors(errors, n, world);
  if (n == 0) return;
  if (!buffer) throw std::invalid_argument("compressed_all_reduce: buffer is null");
  const size_t w = size_t(world), padded = errors.worker.size(), chunk = padded / w;
  const size_t chunk_bytes = chunk / 8;
  const std::vector<size_t> one_each(w, 1);

  std::vector<uint8_t> signs(padded / 8), chunks(padded / 8);
  std::vector<float> worker_scales(w), server_scales(w);
  const float worker_scale = compress_worker(buffer, n, errors.worker, signs);
  auto to_servers = comm.all_to_all_async(signs.data(), chunks.data(), chunk_bytes);
  auto scales = comm.all_gather_async(&worker_scale, worker_scales.data(), one_each, DType::f32);
  wait_all({to_servers, scales});

  std::vector<uint8_t> server_signs(chunk_bytes);
  const float server_scale = compress_server(chunks, worker_scales, errors.server, server_signs);
  for (size_t r = 0; r < w; ++r)  // the same block for every rank
    std::copy(server_signs.begin(), server_signs.end(), signs.begin() + ptrdiff_t(r * chunk_bytes));
  auto from_servers = comm.all_to_all_async(signs.data(), chunks.data(), chunk_bytes);
  auto gathered = comm.all_gather_async(&server_scale, server_scales.data(), one_each, DType::f32);
  wait_all({from_servers, gathered});

  for (size_t j = 0; j < w && j * chunk < n; ++j)
    unpack_signs(chunks.data() + j * chunk_bytes, std::min(chunk, n - j * chunk), server_scales[j],
                 buffer + j * chunk);
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
