// Attention over a key/value cache equals the full causal attention at every
// position: each row prefilled on its own (a call of one row and its length),
// then both rows decoding a token a step at different positions, against
// attention_forward over the whole sequences. T = 70 crosses the 64-row key
// tiles; NKV = 2 of NH = 4 is grouped-query attention. A write past the cache
// is refused, naming the row.
#include <gtest/gtest.h>

#include "reference.h"
#include "tests/common/error_of.h"

namespace hybrid::kernels {
namespace {

using test::Buf;

constexpr int B = 2, T = 70, C = 48, NH = 4, NKV = 2, hs = C / NH, kMax = 80;
constexpr size_t ld = C + 2 * NKV * hs;

// Rows [t0, t0 + n) of row b of a [B, T, width] tensor.
std::vector<float> rows_of(const std::vector<float>& x, int b, int t0, int n, size_t width) {
  const auto first = x.begin() + long((size_t(b) * T + size_t(t0)) * width);
  return {first, first + long(size_t(n) * width)};
}

void expect_cache_matches_full(DType dt, float tol) {
  auto be = make_cpu_backend();
  const auto qkv = test::random_floats(size_t(B) * T * ld, 7, -2.0f, 2.0f);
  Buf full_qkv(dt, qkv), full_out(dt, size_t(B) * T * C);
  std::vector<float> saved(be->attention_saved_bytes(dt, B, T, C, NH) / sizeof(float));
  be->attention_forward(dt, full_out.data(), saved.data(), full_qkv.data(), nullptr, B, T, C, NH,
                        NKV);
  const auto full = full_out.get();

  const size_t per_row = size_t(NKV) * kMax * hs * dtype_size(dt);
  Buf k(dt, size_t(B) * NKV * kMax * hs), v(dt, size_t(B) * NKV * kMax * hs);
  const int prefill[B] = {60, 66};
  for (int b = 0; b < B; ++b) {  // one row at a time, the row's cache
    SCOPED_TRACE(b);
    Buf in(dt, rows_of(qkv, b, 0, prefill[b], ld)), out(dt, size_t(prefill[b]) * C);
    const int start = 0;
    be->attention_cached_forward(
        dt, out.data(), in.data(), dt, static_cast<char*>(k.data()) + b * per_row,
        static_cast<char*>(v.data()) + b * per_row, &start, 1, prefill[b], C, NH, NKV, kMax);
    EXPECT_LT(test::rel_err(out.get(), rows_of(full, b, 0, prefill[b], C)), tol);
  }
  for (int step = 0; step < 4; ++step) {  // both rows, each at its own position
    SCOPED_TRACE(step);
    const int start[B] = {prefill[0] + step, prefill[1] + step};
    std::vector<float> in, want;
    for (int b = 0; b < B; ++b) {
      const auto r = rows_of(qkv, b, start[b], 1, ld);
      in.insert(in.end(), r.begin(), r.end());
      const auto w = rows_of(full, b, start[b], 1, C);
      want.insert(want.end(), w.begin(), w.end());
    }
    Buf bin(dt, in), out(dt, size_t(B) * C);
    be->attention_cached_forward(dt, out.data(), bin.data(), dt, k.data(), v.data(), start, B, 1, C,
                                 NH, NKV, kMax);
    EXPECT_LT(test::rel_err(out.get(), want), tol);
  }
}

TEST(AttentionCached, PrefillThenDecodeEqualsFullAttentionFp32) {
  expect_cache_matches_full(DType::f32, 1e-5f);
}

TEST(AttentionCached, PrefillThenDecodeEqualsFullAttentionBf16) {
  // Both paths read the same bf16 keys and values and compute in fp32: what
  // differs is the order of the sums and the output's rounding.
  expect_cache_matches_full(DType::bf16, 2e-2f);
}

TEST(AttentionCached, AWritePastTheCacheIsRefusedNamingTheRow) {
  auto be = make_cpu_backend();
  Buf qkv(DType::f32, size_t(2) * 3 * ld), out(DType::f32, size_t(2) * 3 * C);
  Buf k(DType::f32, size_t(2) * NKV * 8 * hs), v(DType::f32, size_t(2) * NKV * 8 * hs);
  const int start[2] = {0, 6};
  const auto e = hybrid::test::error_of<std::invalid_argument>([&] {
    be->attention_cached_forward(DType::f32, out.data(), qkv.data(), DType::f32, k.data(), v.data(),
                                 start, 2, 3, C, NH, NKV, 8);
  });
  EXPECT_NE(e.find("row 1 writes positions 6..8 of a cache of 8"), std::string::npos) << e;
}

}  // namespace
}  // namespace hybrid::kernels
