// Attention over a cache whose dtype is not the computation's (an fp32 model
// with a bf16 or fp16 cache, a bf16 model with an fp32 one) against a naive
// double reference that reads the keys and values as the cache holds them:
// rounded to the cache's dtype. Two rows are prefilled alone, then decode at
// different positions; NKV = 2 of NH = 4 (grouped-query attention). The cache
// itself must hold the new keys and values rounded to its dtype, exactly.
#include <gtest/gtest.h>

#include <cmath>

#include "reference.h"

namespace hybrid::kernels {
namespace {

using test::Buf;
using test::Vec;

constexpr int B = 2, T = 40, C = 32, NH = 4, NKV = 2, hs = C / NH, kMax = 48;
constexpr int ld = C + 2 * NKV * hs;
constexpr int kPrefill[B] = {33, 36}, kSteps = 4;

// Naive causal attention of row b's query at position t over its positions
// 0..t, keys and values read through the cache's rounding (qkv [B, T, ld]).
Vec reference_out(const std::vector<float>& qkv, const std::vector<float>& kv_rounded, int b,
                  int t) {
  Vec out(size_t(C), 0.0);
  auto at = [&](const std::vector<float>& x, int pos, int col) {
    return double(x[(size_t(b) * T + size_t(pos)) * ld + size_t(col)]);
  };
  for (int h = 0; h < NH; ++h) {
    const int g = h / (NH / NKV), kcol = C + g * hs, vcol = C + NKV * hs + g * hs;
    Vec s(size_t(t) + 1);
    double mx = -1e300, sum = 0.0;
    for (int j = 0; j <= t; ++j) {
      double d = 0.0;
      for (int c = 0; c < hs; ++c) d += at(qkv, t, h * hs + c) * at(kv_rounded, j, kcol + c);
      s[size_t(j)] = d / std::sqrt(double(hs));
      mx = std::max(mx, s[size_t(j)]);
    }
    for (auto& x : s) sum += (x = std::exp(x - mx));
    for (int j = 0; j <= t; ++j)
      for (int c = 0; c < hs; ++c)
        out[size_t(h * hs + c)] += s[size_t(j)] / sum * at(kv_rounded, j, vcol + c);
  }
  return out;
}

// Runs prefill then kSteps decode steps on the CPU backend, comparing every
// output with the reference; then the cache with the rounded keys and values.
void expect_matches_reference(DType dt, DType cache_dt, double tol) {
  auto be = make_cpu_backend();
  const auto qkv = test::round_to(dt, test::random_floats(size_t(B) * T * ld, 11, -2.0f, 2.0f));
  const auto kv_rounded = test::round_to(cache_dt, qkv);
  const size_t per_row = size_t(NKV) * kMax * hs;
  Buf k(cache_dt, size_t(B) * per_row), v(cache_dt, size_t(B) * per_row);
  auto row_bytes = [&](Buf& cache, int b) {
    return static_cast<char*>(cache.data()) + size_t(b) * per_row * dtype_size(cache_dt);
  };
  auto rows = [&](int b, int t0, int n) {
    const auto first = qkv.begin() + long((size_t(b) * T + size_t(t0)) * ld);
    return std::vector<float>(first, first + long(size_t(n) * ld));
  };
  for (int b = 0; b < B; ++b) {
    Buf in(dt, rows(b, 0, kPrefill[b])), out(dt, size_t(kPrefill[b]) * C);
    const int start = 0;
    be->attention_cached_forward(dt, out.data(), in.data(), cache_dt, row_bytes(k, b),
                                 row_bytes(v, b), &start, 1, kPrefill[b], C, NH, NKV, kMax);
    const auto got = out.get();
    for (int t = 0; t < kPrefill[b]; ++t)
      EXPECT_LT(test::rel_err(std::vector<float>(got.begin() + t * C, got.begin() + (t + 1) * C),
                              reference_out(qkv, kv_rounded, b, t)),
                tol)
          << "row " << b << " prefill position " << t;
  }
  for (int step = 0; step < kSteps; ++step) {
    const int start[B] = {kPrefill[0] + step, kPrefill[1] + step};
    std::vector<float> in = rows(0, start[0], 1), second = rows(1, start[1], 1);
    in.insert(in.end(), second.begin(), second.end());
    Buf bin(dt, in), out(dt, size_t(B) * C);
    be->attention_cached_forward(dt, out.data(), bin.data(), cache_dt, k.data(), v.data(), start, B,
                                 1, C, NH, NKV, kMax);
    const auto got = out.get();
    for (int b = 0; b < B; ++b)
      EXPECT_LT(test::rel_err(std::vector<float>(got.begin() + b * C, got.begin() + (b + 1) * C),
                              reference_out(qkv, kv_rounded, b, start[b])),
                tol)
          << "row " << b << " decode step " << step;
  }
  // The cache holds every written position's keys and values in its dtype.
  const auto kc = k.get(), vc = v.get();
  for (int b = 0; b < B; ++b)
    for (int g = 0; g < NKV; ++g)
      for (int t = 0; t < kPrefill[b] + kSteps; ++t)
        for (int c = 0; c < hs; ++c) {
          const size_t slot = size_t(b) * per_row + (size_t(g) * kMax + size_t(t)) * hs + size_t(c);
          const size_t src = (size_t(b) * T + size_t(t)) * ld + size_t(C + g * hs + c);
          ASSERT_EQ(kc[slot], kv_rounded[src]) << "key b " << b << " g " << g << " t " << t;
          ASSERT_EQ(vc[slot], kv_rounded[src + size_t(NKV * hs)])
              << "value b " << b << " g " << g << " t " << t;
        }
}

// fp32 arithmetic on the same rounded inputs: only the order of the sums differs.
TEST(AttentionCachedDtype, Fp32ModelWithABf16CacheEqualsTheReference) {
  expect_matches_reference(DType::f32, DType::bf16, 1e-5);
}

TEST(AttentionCachedDtype, Fp32ModelWithAnFp16CacheEqualsTheReference) {
  expect_matches_reference(DType::f32, DType::f16, 1e-5);
}

// The output is rounded to bf16 (8 bits of mantissa): 2^-8 relative.
TEST(AttentionCachedDtype, Bf16ModelWithAnFp32CacheEqualsTheReference) {
  expect_matches_reference(DType::bf16, DType::f32, 4e-3);
}

TEST(AttentionCachedDtype, Fp16ModelWithABf16CacheEqualsTheReference) {
  expect_matches_reference(DType::f16, DType::bf16, 1e-3);
}

}  // namespace
}  // namespace hybrid::kernels
