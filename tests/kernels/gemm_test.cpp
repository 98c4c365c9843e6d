// Backend::gemm (the raw GEMM, oneDNN underneath) against a naive double GEMM:
// every transpose combination, beta ∈ {0, 1, 0.5}, alpha ≠ 1, padded leading
// dimensions, low-precision storage, concurrency, and argument errors.
#include "kernels/cpu/gemm.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>

#include "reference.h"

namespace hybrid::kernels {
namespace {

using test::Buf;

// fp32 storage: accumulation in fp32 over K ≤ 100 terms; rel 1e-5 of max |C|.
constexpr double kTolF32 = 1e-5;

struct GemmCase {
  bool ta, tb;
  float alpha, beta;
};

class GemmTest : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmTest, MatchesNaiveWithPaddedStrides) {
  const auto [ta, tb, alpha, beta] = GetParam();
  const int M = 37, N = 53, K = 71;
  const int lda = (ta ? M : K) + 5, ldb = (tb ? K : N) + 3, ldc = N + 7;
  const auto A = test::random_floats(size_t(ta ? K : M) * lda, 1);
  const auto B = test::random_floats(size_t(tb ? N : K) * ldb, 2);
  const auto C0 = test::random_floats(size_t(M) * ldc, 3);
  auto backend = make_cpu_backend();
  std::vector<float> C = C0;
  backend->gemm(DType::f32, ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(),
                ldc);
  test::Vec ref = test::to_double(C0);
  test::gemm_ref(ta, tb, M, N, K, alpha, test::to_double(A), lda, test::to_double(B), ldb, beta,
                 ref, ldc);
  // Padding columns of C (j >= N) must be untouched.
  for (int i = 0; i < M; ++i)
    for (int j = N; j < ldc; ++j) ASSERT_EQ(C[size_t(i) * ldc + j], C0[size_t(i) * ldc + j]);
  const double err = test::rel_err(C, ref);
  std::printf("gemm ta=%d tb=%d alpha=%g beta=%g: rel err %.2e\n", ta, tb, alpha, beta, err);
  EXPECT_LT(err, kTolF32);
}

INSTANTIATE_TEST_SUITE_P(AllTransposes, GemmTest,
                         ::testing::Values(GemmCase{false, false, 1, 0},
                                           GemmCase{false, true, 1, 0}, GemmCase{true, false, 1, 0},
                                           GemmCase{true, true, 1, 0}, GemmCase{false, false, 1, 1},
                                           GemmCase{false, true, 1, 1}, GemmCase{true, false, 1, 1},
                                           GemmCase{true, true, 1, 1},
                                           GemmCase{false, true, 0.5f, 0.5f},
                                           GemmCase{true, false, -2.0f, 1}));

// beta = 0 means C is not read: NaN garbage in C must not leak into the result.
TEST(Gemm, BetaZeroIgnoresGarbageInC) {
  const int M = 8, N = 8, K = 8;
  const auto A = test::random_floats(M * K, 4), B = test::random_floats(K * N, 5);
  std::vector<float> C(M * N, std::numeric_limits<float>::quiet_NaN());
  make_cpu_backend()->gemm(DType::f32, false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f,
                           C.data(), N);
  for (float c : C) EXPECT_TRUE(std::isfinite(c));
}

TEST(Gemm, EmptyKScalesC) {
  std::vector<float> C = {1, 2, 3, 4};
  make_cpu_backend()->gemm(DType::f32, false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f,
                           C.data(), 2);
  EXPECT_EQ(C, (std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f}));
}

// fp16/bf16 storage vs the fp32 GEMM on the same (rounded) inputs: the only extra
// error is C's rounding and C's stored value (beta = 1): bf16 1e-2, fp16 2e-3 relative.
TEST(Gemm, LowPrecisionMatchesFp32) {
  const int M = 64, N = 96, K = 80;
  auto backend = make_cpu_backend();
  for (DType dt : {DType::bf16, DType::f16}) {
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        const auto A = test::round_to(dt, test::random_floats(size_t(M) * K, 6));
        const auto B = test::round_to(dt, test::random_floats(size_t(K) * N, 7));
        const auto C0 = test::round_to(dt, test::random_floats(size_t(M) * N, 8));
        std::vector<float> C32 = C0;
        backend->gemm(DType::f32, ta, tb, M, N, K, 1.0f, A.data(), ta ? M : K, B.data(), tb ? K : N,
                      1.0f, C32.data(), N);
        Buf a(dt, A), b(dt, B), c(dt, C0);
        backend->gemm(dt, ta, tb, M, N, K, 1.0f, a.data(), ta ? M : K, b.data(), tb ? K : N, 1.0f,
                      c.data(), N);
        const double err = test::rel_err(c.get(), C32);
        const double tol = dt == DType::bf16 ? 1e-2 : 2e-3;
        std::printf("gemm %s ta=%d tb=%d (%s): rel err vs fp32 %.2e (tol %.0e)\n",
                    std::string(dtype_name(dt)).c_str(), ta, tb,
                    cpu::gemm_impl_name(dt, ta, tb, M, N, K).c_str(), err, tol);
        EXPECT_LT(err, tol);
        EXPECT_GT(err, 0.0) << "low precision output should show rounding";
      }
  }
}

// A C larger than the fp32 scratch block (4 Mi floats) is converted in row blocks;
// with op(A) transposed each block starts at a column offset of the stored A.
TEST(Gemm, LowPrecisionInRowBlocks) {
  const int M = 2100, N = 2048, K = 16;
  auto backend = make_cpu_backend();
  const DType dt = DType::bf16;
  const auto A = test::round_to(dt, test::random_floats(size_t(K) * M, 11));  // stored [K, M]
  const auto B = test::round_to(dt, test::random_floats(size_t(K) * N, 12));
  const auto C0 = test::round_to(dt, test::random_floats(size_t(M) * N, 13));
  std::vector<float> C32 = C0;
  backend->gemm(DType::f32, true, false, M, N, K, 1.0f, A.data(), M, B.data(), N, 1.0f, C32.data(),
                N);
  Buf a(dt, A), b(dt, B), c(dt, C0);
  backend->gemm(dt, true, false, M, N, K, 1.0f, a.data(), M, b.data(), N, 1.0f, c.data(), N);
  EXPECT_LT(test::rel_err(c.get(), C32), 1e-2);  // bf16 output rounding
}

// Several threads calling gemm at once (as attention does per head) get the same
// results as one thread calling it in turn.
TEST(Gemm, ConcurrentCallsFromOpenMPThreads) {
  const int M = 48, N = 40, K = 32, jobs = 16;
  const auto A = test::random_floats(size_t(jobs) * M * K, 9);
  const auto B = test::random_floats(size_t(jobs) * K * N, 10);
  std::vector<float> serial(size_t(jobs) * M * N), parallel(serial.size());
  for (int j = 0; j < jobs; ++j)
    cpu::gemm(DType::f32, false, true, M, N, K, 1.0f, A.data() + size_t(j) * M * K, K,
              B.data() + size_t(j) * K * N, K, 0.0f, serial.data() + size_t(j) * M * N, N);
#pragma omp parallel for num_threads(4) schedule(dynamic, 1)
  for (int j = 0; j < jobs; ++j)
    cpu::gemm(DType::f32, false, true, M, N, K, 1.0f, A.data() + size_t(j) * M * K, K,
              B.data() + size_t(j) * K * N, K, 0.0f, parallel.data() + size_t(j) * M * N, N);
  test::Vec ref(size_t(M) * N);
  for (int j = 0; j < jobs; ++j) {
    test::gemm_ref(
        false, true, M, N, K, 1.0,
        test::to_double({A.begin() + size_t(j) * M * K, A.begin() + size_t(j + 1) * M * K}), K,
        test::to_double({B.begin() + size_t(j) * K * N, B.begin() + size_t(j + 1) * K * N}), K, 0.0,
        ref, N);
    const std::vector<float> got(parallel.begin() + size_t(j) * M * N,
                                 parallel.begin() + size_t(j + 1) * M * N);
    EXPECT_LT(test::rel_err(got, ref), kTolF32) << "job " << j;
  }
  EXPECT_EQ(serial, parallel);
}

TEST(Gemm, RejectsBadLeadingDimensionsByName) {
  auto backend = make_cpu_backend();
  std::vector<float> x(64);
  try {
    backend->gemm(DType::f32, false, false, 4, 4, 8, 1.0f, x.data(), 4, x.data(), 4, 0.0f, x.data(),
                  4);
    FAIL() << "lda < K accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("lda = 4"), std::string::npos) << e.what();
  }
  EXPECT_THROW(backend->gemm(DType::f32, false, false, 4, 4, 4, 1.0f, x.data(), 4, x.data(), 4,
                             0.0f, x.data(), 3),
               std::invalid_argument);
  EXPECT_THROW(backend->gemm(DType::f32, false, false, -1, 4, 4, 1.0f, x.data(), 4, x.data(), 4,
                             0.0f, x.data(), 4),
               std::invalid_argument);
}

}  // namespace
}  // namespace hybrid::kernels
