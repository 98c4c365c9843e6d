// Attention over a key/value cache (generation): the new tokens' keys and
// values are written into the cache, then their queries run the same
// query-block forward as training's attention (attention_tiles.h) with the
// cache as the key and value matrices. A query at position p sees the cache's
// positions 0..p, so the key tiles and the causal mask are those of a full
// forward over the whole sequence. Decode reads each cached head once, in place:
// an fp32 cache as it is, a 16-bit one widened a tile at a time in L1. A
// prefill converts a 16-bit cache's head once into fp32 scratch. The
// cache's dtype is its own: new keys and values are converted to it on the way
// in (an fp32 model may keep a bf16 cache, a bf16 model an fp32 one).
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/cpu/attention_heads.h"
#include "kernels/cpu/attention_tiles.h"
#include "kernels/cpu/cpu_backend.h"

namespace hybrid::kernels {

namespace {

using cpu::QkvLayout;

// Cache row (b, g) of a [B, NKV, max_tokens, hs] cache.
template <class T>
T* cache_head(T* cache, int b, int g, const QkvLayout& L, int max_tokens) {
  return cache + (size_t(b) * L.NKV + size_t(g)) * size_t(max_tokens) * size_t(L.hs);
}

// n values of the compute type T as the cache's type K (rounded to nearest).
template <class K, class T>
void to_cache_type(K* dst, const T* src, size_t n) {
  if constexpr (std::is_same_v<K, T>) {
    std::copy(src, src + n, dst);
  } else {
    for (size_t i = 0; i < n; ++i) dst[i] = store<K>(load(src[i]));
  }
}

template <class T, class K>
void append_to_cache(K* kc, K* vc, const T* qkv, const int* start, int B, int T_,
                     const QkvLayout& L, int max_tokens) {
  const size_t ld = L.ld(), hs = size_t(L.hs);
  for (int b = 0; b < B; ++b)
    for (int g = 0; g < L.NKV; ++g) {
      K* k = cache_head(kc, b, g, L, max_tokens) + size_t(start[b]) * hs;
      K* v = cache_head(vc, b, g, L, max_tokens) + size_t(start[b]) * hs;
      for (int t = 0; t < T_; ++t) {
        const T* row = qkv + (size_t(b) * T_ + size_t(t)) * ld;
        to_cache_type(k + size_t(t) * hs, row + L.k(g), hs);
        to_cache_type(v + size_t(t) * hs, row + L.v(g), hs);
      }
    }
}

// The first n positions of a cached head as fp32: in place when it is fp32.
template <class T>
const float* cached_f32(const T* head, size_t n, int slot) {
  if constexpr (std::is_same_v<T, float>) {
    return head;
  } else {
    float* f = cpu::thread_scratch(slot, n);
    cpu::to_f32(f, head, n);
    return f;
  }
}

// Positions of a 16-bit cache widened at a time: 32 × hs floats (8 KiB at hs
// 64) stay in L1 between the conversion and their use, so decode reads the
// cache once, in place; converting the whole head first wrote and read it
// again (3 bytes of traffic for each byte of a bf16 cache).
constexpr int kCacheTile = 32;

// Positions j0 .. j0 + n of a cached head as fp32: in place when it is fp32,
// else widened into the thread's scratch slot.
template <class K>
const float* cache_tile(const K* head, int j0, int n, int hs, int slot) {
  const K* src = head + size_t(j0) * size_t(hs);
  if constexpr (std::is_same_v<K, float>) {
    return src;
  } else {
    float* f = cpu::thread_scratch(slot, size_t(kCacheTile) * size_t(hs));
    cpu::to_f32(f, src, size_t(n) * size_t(hs));
    return f;
  }
}

// Decode (one new token a row): the query's scores over the n cached keys,
// their softmax and the weighted values in plain vector loops, the cache read
// tile by tile in its own type. The tile routine's small GEMM calls cost more
// than the arithmetic at one row.
template <class T, class K>
void decode_query_heads(T* out, const T* row, const K* kc, const K* vc, int n, int b, int g,
                        const QkvLayout& L) {
  const int hs = L.hs;
  const float scale = 1.0f / std::sqrt(float(hs));
  float* q = cpu::thread_scratch(0, size_t(hs));
  float* o = cpu::thread_scratch(3, size_t(hs));
  float* p = cpu::thread_scratch(5, size_t(n));
  for (int h = g * L.group(); h < (g + 1) * L.group(); ++h) {
    cpu::to_f32(q, row + size_t(h) * hs, size_t(hs));
    float mx = -std::numeric_limits<float>::infinity();
    for (int j0 = 0; j0 < n; j0 += kCacheTile) {
      const int nt = std::min(kCacheTile, n - j0);
      const float* k = cache_tile(kc, j0, nt, hs, 1);
      for (int j = 0; j < nt; ++j) {
        const float* kj = k + size_t(j) * hs;
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int c = 0; c < hs; ++c) dot += q[c] * kj[c];
        p[j0 + j] = dot * scale;
        mx = std::max(mx, p[j0 + j]);
      }
    }
    float sum = 0.0f;
    for (int j = 0; j < n; ++j) sum += p[j] = cpu::fast_exp(p[j] - mx);
    std::fill(o, o + hs, 0.0f);
    for (int j0 = 0; j0 < n; j0 += kCacheTile) {
      const int nt = std::min(kCacheTile, n - j0);
      const float* v = cache_tile(vc, j0, nt, hs, 2);
      for (int j = 0; j < nt; ++j) {
        const float w = p[j0 + j] / sum;
        const float* vj = v + size_t(j) * hs;
#pragma omp simd
        for (int c = 0; c < hs; ++c) o[c] += w * vj[c];
      }
    }
    cpu::from_f32(out + size_t(b) * L.C + size_t(h) * hs, o, size_t(hs));
  }
}

template <class T, class K>
void attention_cached_fwd(T* out, const T* qkv, K* kc, K* vc, const int* start, int B, int T_,
                          const QkvLayout& L, int max_tokens) {
  append_to_cache(kc, vc, qkv, start, B, T_, L, max_tokens);
  const size_t ld = L.ld();
#pragma omp parallel for schedule(dynamic, 1) if (B * L.NKV > 1)
  for (int bg = 0; bg < B * L.NKV; ++bg) {
    const int b = bg / L.NKV, g = bg % L.NKV;
    const K* kh = cache_head(kc, b, g, L, max_tokens);
    const K* vh = cache_head(vc, b, g, L, max_tokens);
    if (T_ == 1) {
      decode_query_heads(out, qkv + size_t(b) * ld, kh, vh, start[b] + 1, b, g, L);
    } else {
      const size_t seen = size_t(start[b] + T_) * size_t(L.hs);  // the last query's keys
      cpu::attend_query_heads(out, static_cast<float*>(nullptr), qkv + size_t(b) * T_ * ld,
                              cached_f32(kh, seen, 1), cached_f32(vh, seen, 2), start[b], T_, b, g,
                              L);
    }
  }
}

}  // namespace

void CpuBackend::attention_cached_forward(DType dt, void* out, const void* qkv, DType cache_dt,
                                          void* k_cache, void* v_cache, const int* start, int B,
                                          int T, int C, int NH, int NKV, int max_tokens) {
  cpu::check_attention_shape(B, T, C, NH, NKV, "attention_cached_forward");
  for (int b = 0; b < B; ++b)
    if (start[b] < 0 || start[b] + T > max_tokens)
      throw std::invalid_argument("attention_cached_forward: row " + std::to_string(b) +
                                  " writes positions " + std::to_string(start[b]) + ".." +
                                  std::to_string(start[b] + T - 1) + " of a cache of " +
                                  std::to_string(max_tokens));
  const QkvLayout L{C, NH, NKV, C / NH};
  dispatch_dtype(dt, [&](auto tag) {
    using S = decltype(tag);
    dispatch_dtype(cache_dt, [&](auto cache_tag) {
      using K = decltype(cache_tag);
      attention_cached_fwd(static_cast<S*>(out), static_cast<const S*>(qkv),
                           static_cast<K*>(k_cache), static_cast<K*>(v_cache), start, B, T, L,
                           max_tokens);
    });
  });
}

}  // namespace hybrid::kernels
