// Causal self-attention with grouped key/value heads (GPT-2: as many as query
// heads; Llama: NKV dividing NH), flash-style: the T×T score matrix is never
// stored, neither in forward nor in backward.
//
// qkv is [B, T, C + 2·NKV·hs]: a token's row holds its NH query heads, then
// NKV key heads, then NKV value heads; query head h reads key/value head
// h / (NH / NKV), as Hugging Face's repeat_kv. One (batch, key/value head) pair
// per OpenMP task, its query heads in turn: k and v are gathered once, and the
// task is the only writer of their gradients. The task gathers the head
// slices into contiguous fp32 scratch (O(T·hs)), then walks query blocks of
// kQueryBlock rows × key blocks of kKeyBlock columns, skipping the blocks above
// the diagonal, with one kQueryBlock × kKeyBlock score tile in scratch:
//   forward:  S = q·kᵀ/√hs per tile, online softmax (running row max m and sum l,
//             the output rows rescaled by exp(m_old − m_new) when m grows),
//             out = (Σ_tiles exp(S − m)·v) / l; saves only lse = m + log l,
//             fp32 [B, NH, T] (attention_saved_bytes = B·NH·T·4);
//   backward: D = rowsum(dout ⊙ out), then per tile P = exp(S − lse) recomputed,
//             dv += Pᵀ·dout, dP = dout·vᵀ, dS = P ⊙ (dP − D),
//             dq += dS·k/√hs, dk += dSᵀ·q/√hs; added (+=) into dqkv at the end.
// Packed documents (positions given): query t sees keys t − positions[t] .. t
// only; each query's first key bounds its tiles' spans (KeySpan) and the key
// tiles before a query block's first key are skipped, so the work is the sum of
// the documents' own triangles.
// Tile products go through cpu::gemm (oneDNN, single-threaded inside the
// parallel region; see docs/kernels.md for why one head per thread).
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/attention_heads.h"
#include "kernels/cpu/attention_tiles.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/simd.h"

namespace hybrid::kernels {

namespace {

using cpu::gather_head;
using cpu::KeySpan;
using cpu::kKeyBlock;
using cpu::kQueryBlock;
using cpu::QkvLayout;
using cpu::scatter_add_head;

// Each query's first visible key, t − positions[t], per row ([B·T]); empty
// without positions (every query from key 0). Throws for a position outside 0..t.
std::vector<int> first_keys(const int32_t* positions, int B, int T_, const char* op) {
  std::vector<int> first;
  if (!positions) return first;
  first.resize(size_t(B) * T_);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T_; ++t) {
      const int32_t p = positions[size_t(b) * T_ + t];
      if (p < 0 || p > t)
        throw std::out_of_range(std::string(op) + ": positions[" + std::to_string(b) + ", " +
                                std::to_string(t) + "] = " + std::to_string(p) + " is outside 0.." +
                                std::to_string(t));
      first[size_t(b) * T_ + t] = t - p;
    }
  return first;
}

template <class T>
void attention_fwd(T* out, float* lse, const T* qkv, const std::vector<int>& first, int B, int T_,
                   const QkvLayout& L) {
  const size_t ld = L.ld(), head = size_t(T_) * size_t(L.hs);
#pragma omp parallel for schedule(dynamic, 1) if (B * L.NKV > 1)
  for (int bg = 0; bg < B * L.NKV; ++bg) {
    const int b = bg / L.NKV, g = bg % L.NKV;
    const T* rows = qkv + size_t(b) * T_ * ld;
    float* k = cpu::thread_scratch(1, head);
    float* v = cpu::thread_scratch(2, head);
    gather_head(k, rows + L.k(g), T_, L.hs, ld);
    gather_head(v, rows + L.v(g), T_, L.hs, ld);
    cpu::attend_query_heads(out, lse, rows, k, v, 0, T_, b, g, L,
                            first.empty() ? nullptr : first.data() + size_t(b) * T_);
  }
}

// D[t] = Σ_c dout[t, c] · out[t, c] for one head (strided rows, any dtype).
template <class T>
void row_dots(float* D, const float* g, const T* out, int T_, int hs, size_t ld, float* row) {
  for (int t = 0; t < T_; ++t) {
    cpu::to_f32(row, out + size_t(t) * ld, size_t(hs));
    const float* gr = g + size_t(t) * hs;
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int c = 0; c < hs; ++c) dot += gr[c] * row[c];
    D[t] = dot;
  }
}

struct HeadGrads {
  const float *q, *k, *v, *g, *lse, *D;  // g = dout of this head
  float *dq, *dk, *dv;
  const int* first_key;  // [T] or null (see first_keys)
};

// Adds the contributions of query block [r0, r0 + rows) to dq, dk, dv. P and dS
// are rows × kKeyBlock tiles.
void backward_query_block(const HeadGrads& a, int r0, int rows, int hs, float scale, float* P,
                          float* dS) {
  const size_t qoff = size_t(r0) * hs;
  const int r1 = r0 + rows;
  for (int c0 = cpu::first_key_tile(a.first_key, r0, rows, kKeyBlock); c0 < r1; c0 += kKeyBlock) {
    const int cols = std::min(kKeyBlock, r1 - c0);
    const size_t koff = size_t(c0) * hs;
    cpu::gemm(DType::f32, false, true, rows, cols, hs, scale, a.q + qoff, hs, a.k + koff, hs, 0.0f,
              P, kKeyBlock);
    for (int i = 0; i < rows; ++i) {
      float* p = P + size_t(i) * kKeyBlock;
      const KeySpan span(r0 + i, a.first_key ? a.first_key[r0 + i] : 0, c0, cols);
      const int lo = std::min(span.lo, span.n), n = span.n;
      const float lse = a.lse[r0 + i];
#pragma omp simd
      for (int j = lo; j < n; ++j) p[j] = cpu::fast_exp(p[j] - lse);
      std::fill(p, p + lo, 0.0f);
      std::fill(p + n, p + cols, 0.0f);
    }
    // dv[c0:c1] += Pᵀ · dout[r0:r1]
    cpu::gemm(DType::f32, true, false, cols, hs, rows, 1.0f, P, kKeyBlock, a.g + qoff, hs, 1.0f,
              a.dv + koff, hs);
    // dP = dout[r0:r1] · v[c0:c1]ᵀ, then dS = P ⊙ (dP − D) in place
    cpu::gemm(DType::f32, false, true, rows, cols, hs, 1.0f, a.g + qoff, hs, a.v + koff, hs, 0.0f,
              dS, kKeyBlock);
    for (int i = 0; i < rows; ++i) {
      const float* p = P + size_t(i) * kKeyBlock;
      float* d = dS + size_t(i) * kKeyBlock;
      const float Dt = a.D[r0 + i];
#pragma omp simd
      for (int j = 0; j < cols; ++j) d[j] = p[j] * (d[j] - Dt);
    }
    cpu::gemm(DType::f32, false, false, rows, hs, cols, scale, dS, kKeyBlock, a.k + koff, hs, 1.0f,
              a.dq + qoff, hs);
    cpu::gemm(DType::f32, true, false, cols, hs, rows, scale, dS, kKeyBlock, a.q + qoff, hs, 1.0f,
              a.dk + koff, hs);
  }
}

template <class T>
void attention_bwd(T* dqkv, const T* dout, const T* qkv, const T* out, const float* lse,
                   const std::vector<int>& first, int B, int T_, const QkvLayout& L) {
  const int hs = L.hs;
  const float scale = 1.0f / std::sqrt(float(hs));
  const size_t ld = L.ld(), C = size_t(L.C);
  const size_t tile = size_t(kQueryBlock) * kKeyBlock;
#pragma omp parallel for schedule(dynamic, 1) if (B * L.NKV > 1)
  for (int bg = 0; bg < B * L.NKV; ++bg) {
    const int b = bg / L.NKV, g = bg % L.NKV;
    const T* rows = qkv + size_t(b) * T_ * ld;
    T* drows = dqkv + size_t(b) * T_ * ld;
    const size_t head = size_t(T_) * hs;
    float* q = cpu::thread_scratch(0, head);
    float* k = cpu::thread_scratch(1, head);
    float* v = cpu::thread_scratch(2, head);
    float* go = cpu::thread_scratch(3, head);
    float* grads = cpu::thread_scratch(4, 3 * head);            // dq, dk, dv
    float* tiles = cpu::thread_scratch(5, 2 * tile + T_ + hs);  // P, dS, D, one out row
    float* D = tiles + 2 * tile;
    gather_head(k, rows + L.k(g), T_, hs, ld);
    gather_head(v, rows + L.v(g), T_, hs, ld);
    std::fill(grads + head, grads + 3 * head, 0.0f);  // dk, dv: summed over the group's heads
    for (int h = g * L.group(); h < (g + 1) * L.group(); ++h) {
      const size_t row_off = size_t(b) * T_ * C + size_t(h) * hs;
      gather_head(q, rows + size_t(h) * hs, T_, hs, ld);
      gather_head(go, dout + row_off, T_, hs, C);
      row_dots(D, go, out + row_off, T_, hs, C, D + T_);
      std::fill(grads, grads + head, 0.0f);
      const HeadGrads a{q,
                        k,
                        v,
                        go,
                        lse + (size_t(b) * L.NH + size_t(h)) * T_,
                        D,
                        grads,
                        grads + head,
                        grads + 2 * head,
                        first.empty() ? nullptr : first.data() + size_t(b) * T_};
      for (int r0 = 0; r0 < T_; r0 += kQueryBlock)
        backward_query_block(a, r0, std::min(kQueryBlock, T_ - r0), hs, scale, tiles, tiles + tile);
      scatter_add_head(drows + size_t(h) * hs, a.dq, T_, hs, ld);
    }
    scatter_add_head(drows + L.k(g), grads + head, T_, hs, ld);
    scatter_add_head(drows + L.v(g), grads + 2 * head, T_, hs, ld);
  }
}

}  // namespace

size_t CpuBackend::attention_saved_bytes(DType, int B, int T, int, int NH) const {
  return size_t(B) * NH * T * sizeof(float);  // lse per row
}

void CpuBackend::attention_forward(DType dt, void* out, void* saved, const void* qkv,
                                   const int32_t* positions, int B, int T, int C, int NH, int NKV) {
  cpu::check_attention_shape(B, T, C, NH, NKV, "attention_forward");
  const QkvLayout L{C, NH, NKV, C / NH};
  const auto first = first_keys(positions, B, T, "attention_forward");
  dispatch_dtype(dt, [&](auto tag) {
    using S = decltype(tag);
    attention_fwd(static_cast<S*>(out), static_cast<float*>(saved), static_cast<const S*>(qkv),
                  first, B, T, L);
  });
}

void CpuBackend::attention_backward(DType dt, void* dqkv, const void* dout, const void* qkv,
                                    const void* out, const void* saved, const int32_t* positions,
                                    int B, int T, int C, int NH, int NKV) {
  cpu::check_attention_shape(B, T, C, NH, NKV, "attention_backward");
  const QkvLayout L{C, NH, NKV, C / NH};
  const auto first = first_keys(positions, B, T, "attention_backward");
  dispatch_dtype(dt, [&](auto tag) {
    using S = decltype(tag);
    attention_bwd(static_cast<S*>(dqkv), static_cast<const S*>(dout), static_cast<const S*>(qkv),
                  static_cast<const S*>(out), static_cast<const float*>(saved), first, B, T, L);
  });
}

}  // namespace hybrid::kernels
