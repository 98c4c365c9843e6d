// Attention over a key/value cache on the CUDA backend against the CPU backend
// (the oracle, itself checked against a naive double reference in
// attention_cached_dtype_test.cpp), for every compute dtype and every cache
// dtype: two rows prefilled alone, then decoding together at different
// positions, grouped-query attention (NKV = 2 of NH = 4). The outputs agree
// within the compute dtype's tolerance (cuda_pair.h); the caches hold the same
// rounded keys and values (both backends round to nearest). Skips (with the
// reason) without a usable CUDA device.
#include <gtest/gtest.h>

#include <vector>

#include "cuda_pair.h"

namespace hybrid::kernels {
namespace {

using test::Pair;

class CudaAttentionCached : public test::CudaOps {};

constexpr int kB = 2, kT = 24, kC = 32, kNH = 4, kNKV = 2, kHs = kC / kNH, kMax = 32;
constexpr size_t kLd = kC + 2 * kNKV * kHs;

TEST_P(CudaAttentionCached, EqualsTheCpuBackendForEveryCacheDtype) {
  const auto qkv = test::random_floats(size_t(kB) * kT * kLd, 5, -2.0f, 2.0f);
  for (const DType cache_dt : {DType::f32, DType::f16, DType::bf16}) {
    if (!gpu_->supports(cache_dt)) continue;
    SCOPED_TRACE(std::string("cache ") + std::string(dtype_name(cache_dt)));
    const size_t per_row = size_t(kNKV) * kMax * kHs, row_bytes = per_row * dtype_size(cache_dt);
    Pair k(*cpu_, *gpu_, cache_dt, size_t(kB) * per_row),
        v(*cpu_, *gpu_, cache_dt, size_t(kB) * per_row);
    const int prefill[kB] = {20, 17};
    for (int b = 0; b < kB; ++b) {
      const auto first = qkv.begin() + long(size_t(b) * kT * kLd);
      auto in = pair({first, first + long(size_t(prefill[b]) * kLd)});
      auto out = pair(std::vector<float>(size_t(prefill[b]) * kC, 0.0f));
      const int start = 0;
      auto* kc = static_cast<char*>(k.c()) + b * row_bytes;
      auto* vc = static_cast<char*>(v.c()) + b * row_bytes;
      auto* kg = static_cast<char*>(k.g()) + b * row_bytes;
      auto* vg = static_cast<char*>(v.g()) + b * row_bytes;
      cpu_->attention_cached_forward(dt(), out.c(), in.c(), cache_dt, kc, vc, &start, 1, prefill[b],
                                     kC, kNH, kNKV, kMax);
      gpu_->attention_cached_forward(dt(), out.g(), in.g(), cache_dt, kg, vg, &start, 1, prefill[b],
                                     kC, kNH, kNKV, kMax);
      EXPECT_LT(out.err(), tol()) << "prefill of row " << b;
    }
    for (int step = 0; step < 3; ++step) {
      const int start[kB] = {prefill[0] + step, prefill[1] + step};
      std::vector<float> rows;
      for (int b = 0; b < kB; ++b) {
        const auto first = qkv.begin() + long((size_t(b) * kT + size_t(start[b])) * kLd);
        rows.insert(rows.end(), first, first + long(kLd));
      }
      auto in = pair(rows);
      auto out = pair(std::vector<float>(size_t(kB) * kC, 0.0f));
      cpu_->attention_cached_forward(dt(), out.c(), in.c(), cache_dt, k.c(), v.c(), start, kB, 1,
                                     kC, kNH, kNKV, kMax);
      gpu_->attention_cached_forward(dt(), out.g(), in.g(), cache_dt, k.g(), v.g(), start, kB, 1,
                                     kC, kNH, kNKV, kMax);
      EXPECT_LT(out.err(), tol()) << "decode step " << step;
    }
    // The same values rounded the same way: equal up to the float printing of rel_err.
    EXPECT_LT(k.err(), 1e-7);
    EXPECT_LT(v.err(), 1e-7);
  }
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, CudaAttentionCached,
                         ::testing::Values(DType::f32, DType::f16, DType::bf16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace hybrid::kernels
