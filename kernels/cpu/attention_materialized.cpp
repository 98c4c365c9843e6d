// Causal multi-head self-attention (GPT-2) with P materialised, one (batch, head)
// pair per task: the backend's kernel before attention.cpp, kept for tests and
// benchmarks (attention_materialized.h).
//
// qkv is [B, T, 3C]; head h of token t has q at t·3C + h·hs, k at +C, v at +2C.
// Each task gathers its q, k, v head slices into contiguous fp32 scratch (one
// conversion for fp16/bf16, and unit-stride rows for the GEMMs), then
//   forward:  S = q·kᵀ/√hs, P = causal softmax(S) (saved, fp32 [B, NH, T, T]),
//             out = P·v, scattered back into out [B, T, C];
//   backward: dP = dout·vᵀ, dv = Pᵀ·dout, dS = P ⊙ (dP − rowsum(dP ⊙ P)),
//             dq = dS·k/√hs, dk = dSᵀ·q/√hs, added (+=) into dqkv.
// The causal mask is exploited by row blocks: rows [r0, r1) only see columns
// [0, r1), so a GEMM for that block stops at r1 (≈ 40 % fewer FLOPs at T = 256).
// The per-head GEMMs are small, so parallelism is across (b, h) tasks and each
// task calls gemm from inside the OpenMP region, where oneDNN runs on the
// calling thread only (no nested teams; measured faster than a serial loop
// of threaded GEMMs).
#include "kernels/cpu/attention_materialized.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/cpu/attention_heads.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/simd.h"

namespace hybrid::kernels::cpu {

namespace {

constexpr int kRowBlock = 64;

// One (batch, head) task: its q, k, v [T, hs] gathered into this thread's
// scratch slots 0 to 2 (the task may use the slots from 3).
struct HeadTask {
  int bh, b, h;
  const float *q, *k, *v;
};

// Runs body(task) for every (batch, head) pair, one OpenMP task each.
template <class T, class Body>
void for_each_head(const T* qkv, int B, int T_, int C, int NH, Body&& body) {
  const int hs = C / NH;
  const size_t ld = size_t(3) * C, head = size_t(T_) * hs;
#pragma omp parallel for schedule(dynamic, 1) if (B * NH > 1)
  for (int bh = 0; bh < B * NH; ++bh) {
    const int b = bh / NH, h = bh % NH;
    const T* base = qkv + size_t(b) * T_ * ld + size_t(h) * hs;
    float* q = thread_scratch(0, head);
    float* k = thread_scratch(1, head);
    float* v = thread_scratch(2, head);
    gather_head(q, base, T_, hs, ld);
    gather_head(k, base + C, T_, hs, ld);
    gather_head(v, base + 2 * C, T_, hs, ld);
    body(HeadTask{bh, b, h, q, k, v});
  }
}

template <class T>
void attention_fwd(T* out, float* saved, const T* qkv, int B, int T_, int C, int NH) {
  const int hs = C / NH;
  const float scale = 1.0f / std::sqrt(float(hs));
  for_each_head(qkv, B, T_, C, NH, [&](const HeadTask& task) {
    const auto [bh, b, h, q, k, v] = task;
    float* o = thread_scratch(3, size_t(T_) * hs);
    float* P = saved + size_t(bh) * T_ * T_;
    for (int r0 = 0; r0 < T_; r0 += kRowBlock) {
      const int r1 = std::min(T_, r0 + kRowBlock), rows = r1 - r0;
      // S[r0:r1, 0:r1] = scale · q[r0:r1] · k[0:r1]ᵀ
      gemm(DType::f32, false, true, rows, r1, hs, scale, q + size_t(r0) * hs, hs, k, hs, 0.0f,
           P + size_t(r0) * T_, T_);
      for (int t = r0; t < r1; ++t) {
        float* p = P + size_t(t) * T_;
        float mx = p[0];
#pragma omp simd reduction(max : mx)
        for (int j = 0; j <= t; ++j) mx = std::max(mx, p[j]);
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int j = 0; j <= t; ++j) {
          p[j] = fast_exp(p[j] - mx);
          sum += p[j];
        }
        const float inv = 1.0f / sum;
        for (int j = 0; j <= t; ++j) p[j] *= inv;
        std::fill(p + t + 1, p + T_, 0.0f);
      }
      // out[r0:r1] = P[r0:r1, 0:r1] · v[0:r1]
      gemm(DType::f32, false, false, rows, hs, r1, 1.0f, P + size_t(r0) * T_, T_, v, hs, 0.0f,
           o + size_t(r0) * hs, hs);
    }
    T* out_base = out + size_t(b) * T_ * C + size_t(h) * hs;
    for (int t = 0; t < T_; ++t) from_f32(out_base + size_t(t) * C, o + size_t(t) * hs, size_t(hs));
  });
}

template <class T>
void attention_bwd(T* dqkv, const T* dout, const T* qkv, const float* saved, int B, int T_, int C,
                   int NH) {
  const int hs = C / NH;
  const float scale = 1.0f / std::sqrt(float(hs));
  const size_t ld = size_t(3) * C;
  for_each_head(qkv, B, T_, C, NH, [&](const HeadTask& task) {
    const auto [bh, b, h, q, k, v] = task;
    const size_t head = size_t(T_) * hs;
    float* g = thread_scratch(3, head);          // dout of this head
    float* grads = thread_scratch(4, 3 * head);  // dq, dk, dv
    float* dS = thread_scratch(5, size_t(T_) * T_);
    float *dq = grads, *dk = grads + head, *dv = grads + 2 * head;
    gather_head(g, dout + size_t(b) * T_ * C + size_t(h) * hs, T_, hs, size_t(C));
    const float* P = saved + size_t(bh) * T_ * T_;

    for (int r0 = 0; r0 < T_; r0 += kRowBlock) {
      const int r1 = std::min(T_, r0 + kRowBlock), rows = r1 - r0;
      // dP[r0:r1, 0:r1] = dout[r0:r1] · v[0:r1]ᵀ, then dS in place.
      gemm(DType::f32, false, true, rows, r1, hs, 1.0f, g + size_t(r0) * hs, hs, v, hs, 0.0f,
           dS + size_t(r0) * T_, T_);
      for (int t = r0; t < r1; ++t) {
        const float* p = P + size_t(t) * T_;
        float* d = dS + size_t(t) * T_;
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int j = 0; j <= t; ++j) dot += d[j] * p[j];
        for (int j = 0; j <= t; ++j) d[j] = p[j] * (d[j] - dot);
        std::fill(d + t + 1, d + r1, 0.0f);
      }
      // dq[r0:r1] = scale · dS[r0:r1, 0:r1] · k[0:r1]
      gemm(DType::f32, false, false, rows, hs, r1, scale, dS + size_t(r0) * T_, T_, k, hs, 0.0f,
           dq + size_t(r0) * hs, hs);
    }
    // Column blocks of the lower triangle: rows >= c0 are the only non-zeros of
    // columns [c0, c1), so dv[c0:c1] = P[c0:T, c0:c1]ᵀ · dout[c0:T], same for dk.
    for (int c0 = 0; c0 < T_; c0 += kRowBlock) {
      const int c1 = std::min(T_, c0 + kRowBlock), cols = c1 - c0, rows = T_ - c0;
      gemm(DType::f32, true, false, cols, hs, rows, 1.0f, P + size_t(c0) * T_ + c0, T_,
           g + size_t(c0) * hs, hs, 0.0f, dv + size_t(c0) * hs, hs);
      gemm(DType::f32, true, false, cols, hs, rows, scale, dS + size_t(c0) * T_ + c0, T_,
           q + size_t(c0) * hs, hs, 0.0f, dk + size_t(c0) * hs, hs);
    }
    T* dbase = dqkv + size_t(b) * T_ * ld + size_t(h) * hs;
    scatter_add_head(dbase, dq, T_, hs, ld);
    scatter_add_head(dbase + C, dk, T_, hs, ld);
    scatter_add_head(dbase + 2 * C, dv, T_, hs, ld);
  });
}

}  // namespace

size_t attention_materialized_saved_bytes(int B, int T, int NH) {
  return size_t(B) * NH * T * T * sizeof(float);
}

void attention_materialized_forward(DType dt, void* out, float* saved, const void* qkv, int B,
                                    int T, int C, int NH) {
  check_attention_shape(B, T, C, NH, NH, "attention_materialized_forward");
  dispatch_dtype(dt, [&](auto tag) {
    using S = decltype(tag);
    attention_fwd(static_cast<S*>(out), saved, static_cast<const S*>(qkv), B, T, C, NH);
  });
}

void attention_materialized_backward(DType dt, void* dqkv, const void* dout, const void* qkv,
                                     const float* saved, int B, int T, int C, int NH) {
  check_attention_shape(B, T, C, NH, NH, "attention_materialized_backward");
  dispatch_dtype(dt, [&](auto tag) {
    using S = decltype(tag);
    attention_bwd(static_cast<S*>(dqkv), static_cast<const S*>(dout), static_cast<const S*>(qkv),
                  saved, B, T, C, NH);
  });
}

}  // namespace hybrid::kernels::cpu
