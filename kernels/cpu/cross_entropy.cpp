// Fused softmax + cross-entropy over the first V of Vp logits per row, for the
// whole vocabulary or for one vocabulary shard (tensor parallelism: column j is id
// begin + j; the whole vocabulary is the shard from 0). A shard writes its
// statistics (logsumexp, target logit) and combine_shards turns every shard's
// statistics into losses.
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

// Throws for the first target at or past V (checked before any work); a
// negative one is no target (ignored).
void check_targets(const int32_t* targets, int N, int V, const char* op) {
  for (int i = 0; i < N; ++i)
    if (targets[i] >= V)
      throw std::out_of_range(std::string(op) + ": targets[" + std::to_string(i) +
                              "] = " + std::to_string(targets[i]) +
                              " is outside [0, V = " + std::to_string(V) + ")");
}

// Per row: lse_out[i] = logsumexp of the V real columns (-inf when V == 0);
// target_logit[i] = the logit of targets[i] when the shard holds it, else 0;
// losses[i] = lse - that logit. Each output may be null.
template <class T>
void ce_fwd(float* losses, float* lse_out, float* target_logit, const T* logits,
            const int32_t* targets, int N, int begin, int V, int Vp) {
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
    const int64_t t = int64_t(targets[i]) - begin;
    const float x_t = targets[i] >= 0 && t >= 0 && t < V ? load(row[t]) : 0.0f;
    if (lse_out) lse_out[i] = lse;
    if (target_logit) target_logit[i] = x_t;
    if (losses) losses[i] = targets[i] >= 0 ? lse - x_t : 0.0f;
  }
}

template <class T>
void ce_bwd(T* dlogits, const T* logits, const float* lse, const int32_t* targets, float dloss,
            int N, int begin, int V, int Vp) {
#pragma omp parallel for schedule(static) if (N > 1)
  for (int i = 0; i < N; ++i) {
    const T* row = logits + size_t(i) * Vp;
    T* drow = dlogits + size_t(i) * Vp;
    const float l = lse[i];
    if (targets[i] < 0) {  // no target: no gradient
      std::fill(drow, drow + Vp, store<T>(0.0f));
      continue;
    }
    const int64_t target = int64_t(targets[i]) - begin;  // outside [0, V): no onehot here
    for (int c0 = 0; c0 < V; c0 += int(cpu::kChunk)) {
      const size_t len = std::min(cpu::kChunk, size_t(V - c0));
      float xb[cpu::kChunk], o[cpu::kChunk];
      const float* x = cpu::view_f32(row + c0, xb, len);
      for (size_t j = 0; j < len; ++j) o[j] = dloss * cpu::fast_exp(x[j] - l);
      if (target >= c0 && uint64_t(target - c0) < len) o[target - c0] -= dloss;
      cpu::from_f32(drow + c0, o, len);
    }
    std::fill(drow + V, drow + Vp, store<T>(0.0f));
  }
}

// Each row's logsumexp over the shards (max-shifted; a shard without real columns
// has -inf and adds 0) and its loss: lse minus the target logit, which exactly one
// shard holds (the others wrote 0).
void combine(float* losses, float* lse, const float* gathered, const int32_t* targets, int shards,
             int N) {
#pragma omp parallel for schedule(static) if (size_t(N) * shards > cpu::kParallelMin)
  for (int i = 0; i < N; ++i) {
    float mx = -std::numeric_limits<float>::infinity();
    for (int s = 0; s < shards; ++s) mx = std::max(mx, gathered[size_t(s) * 2 * N + i]);
    double sum = 0.0, target = 0.0;
    for (int s = 0; s < shards; ++s) {
      const float* st = gathered + size_t(s) * 2 * N;
      if (st[i] != -std::numeric_limits<float>::infinity()) sum += std::exp(double(st[i]) - mx);
      target += st[N + i];
    }
    const float l = mx + float(std::log(sum));
    if (lse) lse[i] = l;
    if (losses) losses[i] = targets[i] >= 0 ? l - float(target) : 0.0f;
  }
}

void check_shard_sizes(int N, int begin, int V, int Vs, const char* op) {
  if (N < 0 || begin < 0 || V < 0 || Vs < V)
    throw std::invalid_argument(std::string(op) +
                                ": need N >= 0, begin >= 0 and 0 <= V <= Vs, got N = " +
                                std::to_string(N) + ", begin = " + std::to_string(begin) +
                                ", V = " + std::to_string(V) + ", Vs = " + std::to_string(Vs));
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
    ce_fwd(losses, lse, nullptr, static_cast<const T*>(logits), targets, N, 0, V, Vp);
  });
}

void CpuBackend::cross_entropy_backward(DType dt, void* dlogits, const void* logits,
                                        const float* lse, const int32_t* targets, float dloss,
                                        int N, int V, int Vp) {
  check_sizes(N, V, Vp, "cross_entropy_backward");
  check_targets(targets, N, V, "cross_entropy_backward");
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    ce_bwd(static_cast<T*>(dlogits), static_cast<const T*>(logits), lse, targets, dloss, N, 0, V,
           Vp);
  });
}

void CpuBackend::cross_entropy_shard_forward(DType dt, float* stats, const void* logits,
                                             const int32_t* targets, int N, int begin, int V,
                                             int Vs) {
  check_shard_sizes(N, begin, V, Vs, "cross_entropy_shard_forward");
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    ce_fwd(nullptr, stats, stats + N, static_cast<const T*>(logits), targets, N, begin, V, Vs);
  });
}

void CpuBackend::cross_entropy_combine_shards(float* losses, float* lse, const float* gathered,
                                              const int32_t* targets, int shards, int N) {
  if (shards < 1 || N < 0)
    throw std::invalid_argument(
        "cross_entropy_combine_shards: need shards >= 1 and N >= 0, got shards = " +
        std::to_string(shards) + ", N = " + std::to_string(N));
  combine(losses, lse, gathered, targets, shards, N);
}

void CpuBackend::cross_entropy_shard_backward(DType dt, void* dlogits, const void* logits,
                                              const float* lse, const int32_t* targets, float dloss,
                                              int N, int begin, int V, int Vs) {
  check_shard_sizes(N, begin, V, Vs, "cross_entropy_shard_backward");
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    ce_bwd(static_cast<T*>(dlogits), static_cast<const T*>(logits), lse, targets, dloss, N, begin,
           V, Vs);
  });
}

}  // namespace hybrid::kernels
