// Fused softmax + cross-entropy over the first V of Vp logits per row.
//
// forward:  per row, an online logsumexp in one read: per chunk its max (rescaling
//           the running sum when the max rises), Σ exp(x − max) with fast_exp
//           (vectorised; chunk sums in fp32, the row total in double);
//           lse = max + log Σ, loss = lse − x[target].
//           The probabilities are never stored: backward recomputes them from lse.
// backward: dlogits = dloss · (exp(x − lse) − onehot), 0 in the padded columns.
//           It overwrites, and dlogits may alias logits: each chunk is read into
//           fp32 before its results are written, so in-place is safe.
// Rows are independent: OpenMP over rows, a row (50k columns) is one task.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/simd.h"

namespace hybrid::kernels {

namespace {

// Throws for the first target outside [0, V) (checked before any work).
void check_targets(const int32_t* targets, int N, int V, const char* op) {
  for (int i = 0; i < N; ++i)
    if (targets[i] < 0 || targets[i] >= V)
      throw std::out_of_range(std::string(op) + ": targets[" + std::to_string(i) +
                              "] = " + std::to_string(targets[i]) +
                              " is outside [0, V = " + std::to_string(V) + ")");
}

template <class T>
void ce_fwd(float* losses, float* lse_out, const T* logits, const int32_t* targets, int N, int V,
            int Vp) {
#pragma omp parallel for schedule(static) if (N > 1)
  for (int i = 0; i < N; ++i) {
    const T* row = logits + size_t(i) * Vp;
    // Online logsumexp: one read of the row. Each chunk's max rescales the running
    // sum when it raises the running max (exact, not an approximation).
    float mx = -std::numeric_limits<float>::infinity();
    double total = 0.0;
    for (int c0 = 0; c0 < V; c0 += int(cpu::kChunk)) {
      const size_t len = std::min(cpu::kChunk, size_t(V - c0));
      float xb[cpu::kChunk];
      const float* x = cpu::view_f32(row + c0, xb, len);
      float cmx = mx;
#pragma omp simd reduction(max : cmx)
      for (size_t j = 0; j < len; ++j) cmx = std::max(cmx, x[j]);
      if (cmx > mx) {
        total *= std::exp(double(mx) - double(cmx));
        mx = cmx;
      }
      float s = 0.0f;
#pragma omp simd reduction(+ : s)
      for (size_t j = 0; j < len; ++j) s += cpu::fast_exp(x[j] - mx);
      total += s;
    }
    const float lse = mx + float(std::log(total));
    if (lse_out) lse_out[i] = lse;
    if (losses) losses[i] = lse - load(row[targets[i]]);
  }
}

template <class T>
void ce_bwd(T* dlogits, const T* logits, const float* lse, const int32_t* targets, float dloss,
            int N, int V, int Vp) {
#pragma omp parallel for schedule(static) if (N > 1)
  for (int i = 0; i < N; ++i) {
    const T* row = logits + size_t(i) * Vp;
    T* drow = dlogits + size_t(i) * Vp;
    const float l = lse[i];
    const int target = targets[i];
    for (int c0 = 0; c0 < V; c0 += int(cpu::kChunk)) {
      const size_t len = std::min(cpu::kChunk, size_t(V - c0));
      float xb[cpu::kChunk], o[cpu::kChunk];
      const float* x = cpu::view_f32(row + c0, xb, len);
      for (size_t j = 0; j < len; ++j) o[j] = dloss * cpu::fast_exp(x[j] - l);
      if (target >= c0 && size_t(target - c0) < len) o[target - c0] -= dloss;
      cpu::from_f32(drow + c0, o, len);
    }
    std::fill(drow + V, drow + Vp, store<T>(0.0f));
  }
}

void check_sizes(int N, int V, int Vp, const char* op) {
  if (N < 0 || V <= 0 || Vp < V)
    throw std::invalid_argument(std::string(op) +
                                ": need N >= 0 and 0 < V <= Vp, got N = " + std::to_string(N) +
                                ", V = " + std::to_string(V) + ", Vp = " + std::to_string(Vp));
}

}  // namespace

void CpuBackend::cross_entropy_forward(DType dt, float* losses, float* lse, const void* logits,
                                       const int32_t* targets, int N, int V, int Vp) {
  check_sizes(N, V, Vp, "cross_entropy_forward");
  check_targets(targets, N, V, "cross_entropy_forward");
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    ce_fwd(losses, lse, static_cast<const T*>(logits), targets, N, V, Vp);
  });
}

void CpuBackend::cross_entropy_backward(DType dt, void* dlogits, const void* logits,
                                        const float* lse, const int32_t* targets, float dloss,
                                        int N, int V, int Vp) {
  check_sizes(N, V, Vp, "cross_entropy_backward");
  check_targets(targets, N, V, "cross_entropy_backward");
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    ce_bwd(static_cast<T*>(dlogits), static_cast<const T*>(logits), lse, targets, dloss, N, V, Vp);
  });
}

}  // namespace hybrid::kernels
