// The 1-bit compressed all-reduce's phases on host memory (kernels/ops.h).
// Tensors are independent and their sizes differ ~3000× in GPT-2: threads take
// them whole. Norms are summed in double (DeepSpeed's torch sums in fp32; the
// two agree to fp32 rounding).
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/sign_bits.h"

namespace hybrid::kernels {

namespace {

// ‖x‖₂/√n.
float rms_scale(const float* x, size_t n) {
  double sq = 0.0;
#pragma omp simd reduction(+ : sq)
  for (size_t i = 0; i < n; ++i) sq += double(x[i]) * double(x[i]);
  return float(std::sqrt(sq) / std::sqrt(double(n)));
}

// x −= scale·sign(x), in place: what the compressed value leaves behind.
void keep_residual(float* x, size_t n, float scale) {
  for (size_t i = 0; i < n; ++i) x[i] -= scale * compressed_sign(x[i]);
}

float compress_worker(const SignTensor& t, size_t chunk, uint8_t* send, size_t block) {
  float* m = t.worker_error;
  for (size_t i = 0; i < t.n; ++i) m[i] += t.data[i];  // the padding adds zeros
  const float scale = rms_scale(m, t.padded);
  for (size_t j = 0; j * chunk < t.padded; ++j)
    pack_signs(m + j * chunk, chunk, send + j * block + t.offset);
  keep_residual(m, t.padded, scale);
  return scale;
}

// Rank r's signs of the chunk at received + r·block, its scale at
// scales[r·stride]: their average plus the server error, compressed again.
float compress_server(const SignTensor& t, size_t chunk, const uint8_t* received, size_t block,
                      const float* scales, size_t stride, size_t world, uint8_t* signs) {
  float* server = t.server_error;
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
  const float scale = rms_scale(server, chunk);
  pack_signs(server, chunk, signs);
  keep_residual(server, chunk, scale);
  return scale;
}

}  // namespace

void CpuBackend::sign_compress_worker(const SignGroup& g, uint8_t* send, float* scales) {
#pragma omp parallel for schedule(dynamic)
  for (size_t k = 0; k < g.count; ++k)
    scales[k] = compress_worker(g.tensors[k], g.chunk(k), send, g.block);
}

void CpuBackend::sign_compress_server(const SignGroup& g, const uint8_t* received,
                                      const float* all_scales, uint8_t* signs, float* scales) {
  const SignTensor* t = g.tensors;
#pragma omp parallel for schedule(dynamic)
  for (size_t k = 0; k < g.count; ++k)
    scales[k] = compress_server(t[k], g.chunk(k), received + t[k].offset, g.block, all_scales + k,
                                g.count, size_t(g.world), signs + t[k].offset);
}

void CpuBackend::sign_decompress(const SignGroup& g, const uint8_t* received,
                                 const float* all_scales) {
  const size_t w = size_t(g.world);
#pragma omp parallel for schedule(dynamic)
  for (size_t k = 0; k < g.count; ++k) {
    const SignTensor& t = g.tensors[k];
    const size_t chunk = g.chunk(k);
    for (size_t j = 0; j < w && j * chunk < t.n; ++j)
      unpack_signs(received + j * g.block + t.offset, std::min(chunk, t.n - j * chunk),
                   all_scales[j * g.count + k], t.data + j * chunk);
  }
}

}  // namespace hybrid::kernels
