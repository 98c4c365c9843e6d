// The tiles of the CPU's flash-style attention (attention.cpp), shared with the
// attention over a key/value cache (attention_cached.cpp): the packed qkv row's
// layout and one query block's online-softmax forward over causal key tiles.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "kernels/cpu/attention_heads.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/simd.h"

namespace hybrid::kernels::cpu {

// Tile sizes: 64 to 512 were timed with bench_attention, all within noise but
// 64 × 512; 64 × 64 needs the least scratch (docs/kernels.md).
constexpr int kQueryBlock = 64;
constexpr int kKeyBlock = 64;

// Keys [c0, c0 + cols) visible to query t: the first n, n = t − c0 + 1 clipped.
inline int visible_keys(int t, int c0, int cols) { return std::max(0, std::min(cols, t - c0 + 1)); }

// A query's visible keys in tile [c0, c0 + cols): [lo, n) of the tile's columns,
// its document from key `first` (0: the whole causal past) up to itself.
struct KeySpan {
  int lo, n;
  KeySpan(int t, int first, int c0, int cols)
      : lo(std::max(0, std::min(cols, first - c0))), n(visible_keys(t, c0, cols)) {}
  bool empty() const { return lo >= n; }
};

// The first key any of queries [r0, r0 + rows) sees, rounded down to a key
// tile: tiles before it are skipped. first_key null: 0.
inline int first_key_tile(const int* first_key, int r0, int rows, int tile) {
  if (!first_key) return 0;
  int lo = first_key[r0];
  for (int i = 1; i < rows; ++i) lo = std::min(lo, first_key[r0 + i]);
  return lo / tile * tile;
}

// One query block [r0, r0 + rows) of one head: o rows = softmax(q·kᵀ/√hs)·v,
// lse[t] for each of its rows. S is a rows × kKeyBlock tile, ml 2·rows floats.
// first_key (null: every query from key 0): each query's first visible key,
// indexed by query (packed documents: its document's first token).
inline void forward_query_block(float* o, float* lse, const float* q, const float* k,
                                const float* v, int r0, int rows, int hs, float scale, float* S,
                                float* ml, const int* first_key = nullptr) {
  float *m = ml, *l = ml + rows;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  std::fill(m, m + rows, neg_inf);
  std::fill(l, l + rows, 0.0f);
  std::fill(o, o + size_t(rows) * hs, 0.0f);
  const int r1 = r0 + rows;
  for (int c0 = first_key_tile(first_key, r0, rows, kKeyBlock); c0 < r1; c0 += kKeyBlock) {
    const int cols = std::min(kKeyBlock, r1 - c0);
    cpu::gemm(DType::f32, false, true, rows, cols, hs, scale, q, hs, k + size_t(c0) * hs, hs, 0.0f,
              S, kKeyBlock);
    for (int i = 0; i < rows; ++i) {
      float* s = S + size_t(i) * kKeyBlock;
      const KeySpan span(r0 + i, first_key ? first_key[r0 + i] : 0, c0, cols);
      if (span.empty()) {  // masked row (past the diagonal, before its document): adds nothing
        std::fill(s, s + cols, 0.0f);
        continue;
      }
      const int lo = span.lo, n = span.n;
      float mx = m[i];
#pragma omp simd reduction(max : mx)
      for (int j = lo; j < n; ++j) mx = std::max(mx, s[j]);
      float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
      for (int j = lo; j < n; ++j) {
        s[j] = cpu::fast_exp(s[j] - mx);
        sum += s[j];
      }
      std::fill(s, s + lo, 0.0f);
      std::fill(s + n, s + cols, 0.0f);
      if (m[i] != neg_inf && m[i] != mx) {  // rescale what earlier tiles added
        const float corr = cpu::fast_exp(m[i] - mx);
        l[i] *= corr;
        float* orow = o + size_t(i) * hs;
#pragma omp simd
        for (int c = 0; c < hs; ++c) orow[c] *= corr;
      }
      l[i] += sum;
      m[i] = mx;
    }
    cpu::gemm(DType::f32, false, false, rows, hs, cols, 1.0f, S, kKeyBlock, v + size_t(c0) * hs, hs,
              1.0f, o, hs);
  }
  for (int i = 0; i < rows; ++i) {
    const float inv = 1.0f / l[i];
    float* orow = o + size_t(i) * hs;
#pragma omp simd
    for (int c = 0; c < hs; ++c) orow[c] *= inv;
    lse[i] = m[i] + std::log(l[i]);
  }
}

// A token's qkv row: NH query heads, then NKV key and NKV value heads.
struct QkvLayout {
  int C, NH, NKV, hs;
  size_t ld() const { return size_t(C) + 2 * size_t(NKV) * size_t(hs); }
  size_t k(int g) const { return size_t(C) + size_t(g) * hs; }
  size_t v(int g) const { return size_t(C) + size_t(NKV + g) * hs; }
  int group() const { return NH / NKV; }
};

// The query heads of key/value head g in row b of a batch: their T queries,
// rows of the packed qkv at `rows`, standing at positions first..first + T − 1,
// attend over keys and values k, v (fp32, position p at row p) up to their
// own, from first_key[t] on when given (packed documents: with first 0). Each
// head's output rows go to out [B, T, C]. lse: each head's [B, NH, T]
// log-sum-exps, or null when nothing keeps them.
template <class T>
void attend_query_heads(T* out, float* lse, const T* rows, const float* k, const float* v,
                        int first, int T_, int b, int g, const QkvLayout& L,
                        const int* first_key = nullptr) {
  const int hs = L.hs;
  const float scale = 1.0f / std::sqrt(float(hs));
  float* q = thread_scratch(0, size_t(T_) * hs);
  float* o = thread_scratch(3, size_t(T_) * hs);
  float* S = thread_scratch(4, size_t(kQueryBlock) * kKeyBlock + 3 * size_t(kQueryBlock));
  float* ml = S + size_t(kQueryBlock) * kKeyBlock;
  float* unkept = ml + 2 * kQueryBlock;  // the log-sum-exps nothing keeps
  for (int h = g * L.group(); h < (g + 1) * L.group(); ++h) {
    gather_head(q, rows + size_t(h) * hs, T_, hs, L.ld());
    float* head_lse = lse ? lse + (size_t(b) * L.NH + size_t(h)) * T_ : nullptr;
    for (int r0 = 0; r0 < T_; r0 += kQueryBlock) {
      const int n = std::min(kQueryBlock, T_ - r0);
      forward_query_block(o + size_t(r0) * hs, head_lse ? head_lse + r0 : unkept,
                          q + size_t(r0) * hs, k, v, first + r0, n, hs, scale, S, ml, first_key);
    }
    T* out_base = out + size_t(b) * T_ * L.C + size_t(h) * hs;
    for (int t = 0; t < T_; ++t)
      from_f32(out_base + size_t(t) * L.C, o + size_t(t) * hs, size_t(hs));
  }
}

}  // namespace hybrid::kernels::cpu
