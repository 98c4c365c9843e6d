// DeepSpeed's fused Lamb on fp32 master weights, in the two passes the op
// interface defines (kernels/ops.h): moments and per-segment norms, then the
// update scaled by each segment's trust ratio.
//
// Work is cut into pieces: each segment (parameter tensor) intersected with
// blocks of kChunk elements counted from the start of the call. A piece's sums
// go through 8 fixed float lanes, and pieces are added into the double sums in
// order after the parallel loop, so the sums depend neither on the thread count
// nor on how a caller splits a range at block multiples (the offloaded optimizer
// runs it chunk by chunk and must match the on-device optimizer bit for bit).
#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/simd.h"

namespace hybrid::kernels {

namespace {

struct Piece {
  size_t begin = 0, end = 0;
  int segment = 0;
};

std::vector<Piece> lamb_pieces(const int64_t* bounds, int segments) {
  if (segments < 0 || (segments > 0 && bounds[0] != 0))
    throw std::invalid_argument("lamb: segment bounds must start at 0");
  std::vector<Piece> pieces;
  for (int s = 0; s < segments; ++s) {
    if (bounds[s + 1] < bounds[s])
      throw std::invalid_argument("lamb: segment bounds must not decrease (segment " +
                                  std::to_string(s) + ")");
    size_t b = size_t(bounds[s]);
    const size_t e = size_t(bounds[s + 1]);
    while (b < e) {
      const size_t block_end = (b / cpu::kChunk + 1) * cpu::kChunk;
      const size_t pe = std::min(e, block_end);
      pieces.push_back({b, pe, s});
      b = pe;
    }
  }
  return pieces;
}

inline float lamb_denom(float v, float eps, bool inside) {
  return inside ? std::sqrt(v + eps) : std::sqrt(v) + eps;
}

// Σ x² over n floats through 8 lanes (the loop vectorises; the order is fixed).
double sum_squares(const float* x, size_t n) {
  std::array<float, 8> lane{};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (size_t j = 0; j < 8; ++j) lane[j] += x[i + j] * x[i + j];
  double total = 0.0;
  for (float l : lane) total += double(l);
  for (; i < n; ++i) total += double(x[i]) * double(x[i]);
  return total;
}

// Runs body(k, pieces[k]) for every piece: across threads (a static schedule)
// above kParallelMin elements in all, else on this one.
template <class Body>
void for_each_piece(const std::vector<Piece>& pieces, Body&& body) {
  const int64_t count = int64_t(pieces.size());
  const size_t n = pieces.empty() ? 0 : pieces.back().end;
#pragma omp parallel for schedule(static) if (n > cpu::kParallelMin)
  for (int64_t k = 0; k < count; ++k) body(size_t(k), pieces[size_t(k)]);
}

template <class G>
void moments_impl(const LambParams& p, const float* master, float* m, float* v, const G* grad,
                  float grad_scale, const std::vector<Piece>& pieces, double* sums) {
  const float b1 = p.beta1, b2 = p.beta2, eps = p.eps, wd = p.weight_decay;
  const bool inside = p.eps_inside_sqrt;
  std::vector<double> w2(pieces.size()), u2(pieces.size());
  for_each_piece(pieces, [&](size_t k, const Piece& pc) {
    const size_t i0 = pc.begin, len = pc.end - pc.begin;
    float gb[cpu::kChunk], ub[cpu::kChunk];
    const float* g = cpu::view_f32(grad + i0, gb, len);
    const float* w = master + i0;
    float* mm = m + i0;
    float* vv = v + i0;
    for (size_t i = 0; i < len; ++i) {
      const float gi = g[i] * grad_scale;
      const float mi = b1 * mm[i] + (1.0f - b1) * gi;
      const float vi = b2 * vv[i] + (1.0f - b2) * gi * gi;
      mm[i] = mi;
      vv[i] = vi;
      ub[i] = mi / lamb_denom(vi, eps, inside) + wd * w[i];
    }
    w2[k] = sum_squares(w, len);
    u2[k] = sum_squares(ub, len);
  });
  for (size_t k = 0; k < pieces.size(); ++k) {
    sums[2 * pieces[k].segment] += w2[k];
    sums[2 * pieces[k].segment + 1] += u2[k];
  }
}

template <class P>
void update_impl(const LambParams& p, float* master, const float* m, const float* v,
                 const std::vector<Piece>& pieces, const float* coeffs, P* param_out) {
  const float eps = p.eps, wd = p.weight_decay, step_size = lamb_step_size(p);
  const bool inside = p.eps_inside_sqrt;
  for_each_piece(pieces, [&](size_t, const Piece& pc) {
    const size_t i0 = pc.begin, len = pc.end - pc.begin;
    const float scale = step_size * coeffs[pc.segment];
    float* w = master + i0;
    const float* mm = m + i0;
    const float* vv = v + i0;
    for (size_t i = 0; i < len; ++i) {
      const float u = mm[i] / lamb_denom(vv[i], eps, inside) + wd * w[i];
      w[i] -= scale * u;
    }
    if (param_out) cpu::from_f32(param_out + i0, w, len);
  });
}

void check_step(const LambParams& p) {
  if (p.bias_correction && p.step < 1)
    throw std::invalid_argument("lamb: step must be >= 1 with bias correction, got " +
                                std::to_string(p.step));
}

}  // namespace

void CpuBackend::lamb_moments(const LambParams& p, const float* master, float* m, float* v,
                              DType grad_dt, const void* grad, float grad_scale,
                              const int64_t* bounds, int segments, double* sums) {
  check_step(p);
  const auto pieces = lamb_pieces(bounds, segments);
  dispatch_dtype(grad_dt, [&](auto gtag) {
    using G = decltype(gtag);
    moments_impl(p, master, m, v, static_cast<const G*>(grad), grad_scale, pieces, sums);
  });
}

void CpuBackend::lamb_update(const LambParams& p, float* master, const float* m, const float* v,
                             const int64_t* bounds, int segments, const float* coeffs,
                             DType param_dt, void* param_out) {
  check_step(p);
  const auto pieces = lamb_pieces(bounds, segments);
  dispatch_dtype(param_dt, [&](auto ptag) {
    using P = decltype(ptag);
    update_impl(p, master, m, v, pieces, coeffs, static_cast<P*>(param_out));
  });
}

}  // namespace hybrid::kernels
