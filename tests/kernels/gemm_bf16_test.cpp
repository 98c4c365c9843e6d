// The AVX512_BF16 GEMM (kernels/cpu/gemm_bf16.h) against a naive double GEMM of
// the same bf16 inputs: every transpose, alpha, beta, a bias, tails in M, N and
// an odd K, calls from inside a parallel region, and the provider plumbing.
// Skipped (with the reason) on CPUs without AVX512_BF16.
#include "kernels/cpu/gemm_bf16.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_provider.h"
#include "reference.h"

namespace hybrid::kernels {
namespace {

using cpu::GemmProvider;

// fp32 accumulation of exact bf16 products (|x| ≤ 1) over K ≤ 1000 terms (~1e-5),
// then one bf16 rounding of C (at most 2^-8 = 3.9e-3 relative): 5e-3 of max |C|.
constexpr double kTol = 5e-3;

struct Case {
  bool ta, tb;
  float alpha, beta;
  bool bias;
  int M, N, K;
};

class Bf16Gemm : public ::testing::TestWithParam<Case> {};

TEST_P(Bf16Gemm, MatchesNaiveOnTheSameBf16Inputs) {
  if (!cpu::bf16_kernel_available()) GTEST_SKIP() << "the CPU has no AVX512_BF16";
  const auto [ta, tb, alpha, beta, with_bias, M, N, K] = GetParam();
  const int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 7;
  const DType dt = DType::bf16;
  const auto A = test::round_to(dt, test::random_floats(size_t(ta ? K : M) * lda, 1));
  const auto B = test::round_to(dt, test::random_floats(size_t(tb ? N : K) * ldb, 2));
  const auto C0 = test::round_to(dt, test::random_floats(size_t(M) * ldc, 3));
  const auto bias = test::round_to(dt, test::random_floats(size_t(N), 4));
  test::Buf a(dt, A), b(dt, B), c(dt, C0), bb(dt, bias);
  cpu::gemm_bf16_avx512(ta, tb, M, N, K, alpha, static_cast<const bf16_t*>(a.data()), lda,
                        static_cast<const bf16_t*>(b.data()), ldb, beta,
                        static_cast<bf16_t*>(c.data()), ldc,
                        with_bias ? static_cast<const bf16_t*>(bb.data()) : nullptr);
  test::Vec ref = test::to_double(C0);
  test::gemm_ref(ta, tb, M, N, K, alpha, test::to_double(A), lda, test::to_double(B), ldb, beta,
                 ref, ldc);
  const auto got = c.get();
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < ldc; ++j) {
      const size_t at = size_t(i) * ldc + j;
      if (j >= N)
        ASSERT_EQ(got[at], C0[at]) << "padding column " << j << " of row " << i << " was written";
      else if (with_bias)
        ref[at] += bias[j];
    }
  const double err = test::rel_err(got, ref);
  std::printf("bf16 kernel %dx%dx%d ta=%d tb=%d alpha=%g beta=%g bias=%d: rel err %.2e\n", M, N, K,
              ta, tb, alpha, beta, with_bias, err);
  EXPECT_LT(err, kTol);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Bf16Gemm,
    ::testing::Values(Case{false, false, 1, 0, false, 37, 53, 71},   // tails everywhere, odd K
                      Case{false, true, 1, 0, false, 37, 53, 71},    // forward (NT)
                      Case{true, false, 1, 1, false, 53, 37, 70},    // weight gradient (TN), +=
                      Case{true, true, 1, 0, false, 12, 32, 2},      // one exact tile
                      Case{false, false, 1, 1, false, 64, 96, 128},  // input gradient (NN), +=
                      Case{false, true, 1, 0, true, 100, 200, 64},   // forward with bias
                      Case{false, true, 0.5f, 0.5f, false, 25, 33, 1},
                      Case{true, false, -2.0f, 1, false, 13, 31, 999},
                      Case{false, false, 1, 0, false, 1, 1, 1}));

// Inside a parallel region the kernel runs on the calling thread: every thread's
// result equals the one computed alone.
TEST(Bf16Gemm, ConcurrentCallsFromOpenMPThreadsMatchSerialOnes) {
  if (!cpu::bf16_kernel_available()) GTEST_SKIP() << "the CPU has no AVX512_BF16";
  const int M = 30, N = 40, K = 50, jobs = 8;
  const DType dt = DType::bf16;
  test::Buf a(dt, test::random_floats(size_t(jobs) * M * K, 5));
  test::Buf b(dt, test::random_floats(size_t(K) * N, 6));
  test::Buf serial(dt, std::vector<float>(size_t(jobs) * M * N, 0.0f));
  test::Buf parallel(dt, std::vector<float>(size_t(jobs) * M * N, 0.0f));
  const auto run = [&](test::Buf& out, int j) {
    cpu::gemm_bf16_avx512(false, false, M, N, K, 1.0f,
                          static_cast<const bf16_t*>(a.data()) + size_t(j) * M * K, K,
                          static_cast<const bf16_t*>(b.data()), N, 0.0f,
                          static_cast<bf16_t*>(out.data()) + size_t(j) * M * N, N, nullptr);
  };
  for (int j = 0; j < jobs; ++j) run(serial, j);
#pragma omp parallel for num_threads(4) schedule(dynamic, 1)
  for (int j = 0; j < jobs; ++j) run(parallel, j);
  EXPECT_EQ(serial.get(), parallel.get());
}

// The kernel keeps oneDNN's ISA cap: below AVX512_CORE_BF16 it is not used, so
// ONEDNN_MAX_CPU_ISA=AVX2 puts every GEMM on the AVX2 path (portable-check.sh).
TEST(Bf16Gemm, KeepsOneDnnsIsaCap) {
  EXPECT_TRUE(cpu::bf16_isa_allowed(nullptr));
  EXPECT_TRUE(cpu::bf16_isa_allowed("DEFAULT"));
  EXPECT_TRUE(cpu::bf16_isa_allowed("AVX512_CORE_BF16"));
  EXPECT_TRUE(cpu::bf16_isa_allowed("AVX512_CORE_AMX"));
  for (const char* below : {"SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX512_CORE", "AVX512_CORE_VNNI"})
    EXPECT_FALSE(cpu::bf16_isa_allowed(below)) << below;
}

// Through cpu::gemm_on: bf16 runs on the kernel and is counted; fp32 given to it
// runs on oneDNN (it computes bf16 only), and the provider says so.
TEST(Bf16Gemm, IsAProviderForBf16Only) {
  EXPECT_TRUE(cpu::provider_supports(GemmProvider::avx512bf16, DType::bf16));
  EXPECT_FALSE(cpu::provider_supports(GemmProvider::avx512bf16, DType::f32));
  EXPECT_FALSE(cpu::provider_supports(GemmProvider::avx512bf16, DType::f16));
  EXPECT_EQ(cpu::provider_available(GemmProvider::avx512bf16), cpu::bf16_kernel_available());
  if (!cpu::bf16_kernel_available()) GTEST_SKIP() << "the CPU has no AVX512_BF16";
  const DType dt = DType::bf16;
  test::Buf a(dt, test::random_floats(64, 7)), b(dt, test::random_floats(64, 8)),
      c(dt, std::vector<float>(64, 0.0f));
  const uint64_t mine = cpu::gemm_calls(GemmProvider::avx512bf16);
  const uint64_t dnnl = cpu::gemm_calls(GemmProvider::onednn);
  cpu::gemm_on(GemmProvider::avx512bf16, dt, false, false, 8, 8, 8, 1.0f, a.data(), 8, b.data(), 8,
               0.0f, c.data(), 8);
  EXPECT_EQ(cpu::gemm_calls(GemmProvider::avx512bf16), mine + 1);
  std::vector<float> a32(64, 0.5f), b32(64, 0.25f), c32(64);
  cpu::gemm_on(GemmProvider::avx512bf16, DType::f32, false, false, 8, 8, 8, 1.0f, a32.data(), 8,
               b32.data(), 8, 0.0f, c32.data(), 8);
  EXPECT_EQ(cpu::gemm_calls(GemmProvider::avx512bf16), mine + 1);
  EXPECT_EQ(cpu::gemm_calls(GemmProvider::onednn), dnnl + 1);
  EXPECT_FLOAT_EQ(c32[0], 8 * 0.5f * 0.25f);
}

}  // namespace
}  // namespace hybrid::kernels
