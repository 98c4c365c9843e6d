// cpu::gemv (the decode step's linear layer) on every instruction set this CPU
// has, against the naive double matmul of the same dt-rounded inputs: fp32,
// fp16 and bf16 weights, 1..8 rows, odd K and N (tails of the unrolled and
// vector loops, and of the four-column blocks), with and without a bias, the weight in the
// model's [N, K] layout; calls from inside a parallel region; the routing of
// matmul_forward (gemv at <= 8 rows, the GEMM above); the ISA caps; bad sizes.
#include "kernels/cpu/gemv.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cstring>

#include "kernels/cpu/gemm_provider.h"
#include "reference.h"

namespace hybrid::kernels {
namespace {

using cpu::GemvIsa;

// fp32 sums of exact products (|x| <= 1, K <= 800): rounding of ~50-term lane
// sums and a 16-way tree, well under 1e-5 of max |out| (measured 1e-7..5e-7).
// fp16/bf16 outputs are rounded once: 2^-11 (fp16) and 2^-8 (bf16) relative,
// so 1e-3 and 5e-3 of max |out|.
double tolerance(DType dt) { return dt == DType::f32 ? 1e-5 : dt == DType::f16 ? 1e-3 : 5e-3; }

struct Problem {
  DType dt;
  int M, K, N;
  bool bias;
  std::vector<float> inp, w, b;  // dt-rounded
  Problem(DType dt_, int M_, int K_, int N_, bool bias_)
      : dt(dt_), M(M_), K(K_), N(N_), bias(bias_) {
    inp = test::round_to(dt, test::random_floats(size_t(M) * K, uint32_t(M * 7 + K)));
    w = test::round_to(dt, test::random_floats(size_t(N) * K, uint32_t(N * 3 + K)));
    b = test::round_to(dt, test::random_floats(size_t(N), uint32_t(N)));
  }
  test::Vec reference() const {
    const test::Vec bd = test::to_double(b);
    return test::matmul_fwd_ref(test::to_double(inp), test::to_double(w), bias ? &bd : nullptr, M,
                                K, N);
  }
  // gemv on isa; out's padding past M·N must stay untouched.
  std::vector<float> run(GemvIsa isa) const {
    test::Buf x(dt, inp), wb(dt, w), bb(dt, b), out(dt, size_t(M) * N + 5);
    out.set(std::vector<float>(size_t(M) * N + 5, 7.0f));
    cpu::gemv_on(isa, dt, out.data(), x.data(), wb.data(), bias ? bb.data() : nullptr, M, K, N);
    std::vector<float> got = out.get();
    for (size_t i = size_t(M) * N; i < got.size(); ++i)
      EXPECT_EQ(got[i], 7.0f) << "gemv wrote past the output at " << i;
    got.resize(size_t(M) * N);
    return got;
  }
};

std::vector<GemvIsa> isas_for(DType dt) {
  std::vector<GemvIsa> out;
  for (GemvIsa isa : {GemvIsa::avx2, GemvIsa::avx512, GemvIsa::avx512bf16})
    if (cpu::gemv_isa_available(isa) && (isa != GemvIsa::avx512bf16 || dt == DType::bf16))
      out.push_back(isa);
  return out;
}

// {K, N}: K below, at and past one step of the unrolled loops (32 k on AVX2,
// 64 on AVX-512 fp32, 128 on AVX512_BF16) and with tails of every length class
// (masked or scalar); N with every count of columns in the last block of four.
const std::pair<int, int> kSizes[] = {{1, 1},    {7, 5},    {16, 4},    {17, 13}, {32, 2},
                                      {33, 31},  {64, 9},   {100, 37},  {128, 6}, {129, 3},
                                      {257, 14}, {773, 67}, {300, 1001}};

class Gemv : public ::testing::TestWithParam<DType> {};

TEST_P(Gemv, MatchesNaiveOnEveryIsaRowCountAndOddSize) {
  const DType dt = GetParam();
  const auto isas = isas_for(dt);
  ASSERT_FALSE(isas.empty()) << "no gemv path for " << dtype_name(dt) << " (no AVX2?)";
  double worst = 0;
  for (GemvIsa isa : isas)
    for (int M = 1; M <= cpu::kGemvMaxRows; ++M)
      for (const auto& [K, N] : kSizes)
        for (bool bias : {false, true}) {
          const Problem p(dt, M, K, N, bias);
          const double err = test::rel_err(p.run(isa), p.reference());
          worst = std::max(worst, err);
          ASSERT_LT(err, tolerance(dt)) << cpu::gemv_isa_name(isa) << " M " << M << " K " << K
                                        << " N " << N << " bias " << bias;
        }
  std::printf("gemv %s: worst relative error %.2e over %zu isas\n",
              std::string(dtype_name(dt)).c_str(), worst, isas.size());
}

// The sizes of GPT-2's layers at a decode step, through the threaded path.
TEST_P(Gemv, MatchesNaiveAtTheModelsShapes) {
  const DType dt = GetParam();
  for (GemvIsa isa : isas_for(dt))
    for (const auto& [K, N] : {std::pair{768, 2304}, {3072, 768}})
      for (int M : {1, 8}) {
        const Problem p(dt, M, K, N, true);
        EXPECT_LT(test::rel_err(p.run(isa), p.reference()), tolerance(dt))
            << cpu::gemv_isa_name(isa) << " M " << M << " K " << K << " N " << N;
      }
}

TEST_P(Gemv, InsideAParallelRegionGivesTheSameBits) {
  const DType dt = GetParam();
  const Problem p(dt, 3, 300, 1001, true);
  for (GemvIsa isa : isas_for(dt)) {
    const auto alone = p.run(isa);
    std::vector<std::vector<float>> per_thread(2);
#pragma omp parallel num_threads(2)
    per_thread[size_t(omp_get_thread_num())] = p.run(isa);
    for (const auto& got : per_thread) EXPECT_EQ(got, alone) << cpu::gemv_isa_name(isa);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, Gemv, ::testing::Values(DType::f32, DType::f16, DType::bf16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

uint64_t all_gemm_calls() {
  uint64_t n = 0;
  for (auto p : cpu::kGemmProviders) n += cpu::gemm_calls(p);
  return n;
}

// matmul_forward runs gemv (bit for bit) up to kGemvMaxRows rows and the GEMM above.
TEST(GemvRouting, MatmulForwardTakesGemvAtFewRowsOnly) {
  auto be = make_cpu_backend();
  for (DType dt : {DType::f32, DType::bf16}) {
    GemvIsa isa;
    ASSERT_TRUE(cpu::gemv_isa_for(dt, &isa));
    for (int M : {1, cpu::kGemvMaxRows, cpu::kGemvMaxRows + 1}) {
      const Problem p(dt, M, 64, 40, true);
      test::Buf x(dt, p.inp), w(dt, p.w), b(dt, p.b), out(dt, size_t(M) * 40);
      const uint64_t before = all_gemm_calls();
      be->matmul_forward(dt, out.data(), x.data(), w.data(), b.data(), M, 64, 40);
      const uint64_t gemms = all_gemm_calls() - before;
      if (M <= cpu::kGemvMaxRows) {
        EXPECT_EQ(gemms, 0u) << "M " << M;
        EXPECT_EQ(out.get(), p.run(isa)) << "M " << M;
      } else {
        EXPECT_EQ(gemms, 1u);
        EXPECT_LT(test::rel_err(out.get(), p.reference()), tolerance(dt));
      }
    }
  }
}

TEST(GemvIsa, CapsFollowOnednnsNames) {
  for (GemvIsa isa : {GemvIsa::avx2, GemvIsa::avx512, GemvIsa::avx512bf16})
    EXPECT_TRUE(cpu::gemv_isa_allowed(isa, nullptr));
  EXPECT_TRUE(cpu::gemv_isa_allowed(GemvIsa::avx2, "AVX2"));
  EXPECT_FALSE(cpu::gemv_isa_allowed(GemvIsa::avx2, "AVX"));
  EXPECT_FALSE(cpu::gemv_isa_allowed(GemvIsa::avx512, "AVX2"));
  EXPECT_TRUE(cpu::gemv_isa_allowed(GemvIsa::avx512, "AVX512_CORE"));
  EXPECT_FALSE(cpu::gemv_isa_allowed(GemvIsa::avx512bf16, "AVX512_CORE"));
  EXPECT_TRUE(cpu::gemv_isa_allowed(GemvIsa::avx512bf16, "AVX512_CORE_BF16"));
}

TEST(GemvErrors, RowsOutsideOneToEightAndAnIsaThatCannotRunTheDtype) {
  std::vector<float> x(9 * 4), w(4 * 4), out(9 * 4);
  for (int M : {0, cpu::kGemvMaxRows + 1})
    EXPECT_THROW(cpu::gemv(DType::f32, out.data(), x.data(), w.data(), nullptr, M, 4, 4),
                 std::invalid_argument)
        << "M " << M;
  EXPECT_THROW(cpu::gemv_on(GemvIsa::avx512bf16, DType::f32, out.data(), x.data(), w.data(),
                            nullptr, 1, 4, 4),
               std::invalid_argument);
}

}  // namespace
}  // namespace hybrid::kernels
