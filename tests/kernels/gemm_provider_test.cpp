// GEMM providers: OpenBLAS against the naive double GEMM (the same cases as
// gemm_test.cpp's oneDNN), its core type per CPU, the routes cpu::gemm follows,
// and the measured selection with its cache file (reused, corrupt, shared).
#include "kernels/cpu/gemm_provider.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_selection.h"
#include "kernels/cpu/openblas.h"
#include "reference.h"

namespace hybrid::kernels {
namespace {

using cpu::GemmProvider;
using cpu::GemmShape;
namespace fs = std::filesystem;

// Why OpenBLAS cannot run here, or nullopt when it can.
std::optional<std::string> openblas_missing() {
  std::string why;
  if (cpu::provider_available(GemmProvider::openblas, &why)) return std::nullopt;
  return why;
}

struct Case {
  bool ta, tb;
  float alpha, beta;
  bool bias;
};

class OpenBlasGemm : public ::testing::TestWithParam<Case> {};

// fp32 accumulation over K = 71 terms: rel 1e-5 of max |C|, as for oneDNN.
TEST_P(OpenBlasGemm, MatchesNaiveWithPaddedStrides) {
  if (auto why = openblas_missing()) GTEST_SKIP() << *why;
  const auto [ta, tb, alpha, beta, with_bias] = GetParam();
  const int M = 37, N = 53, K = 71;
  const int lda = (ta ? M : K) + 5, ldb = (tb ? K : N) + 3, ldc = N + 7;
  const auto A = test::random_floats(size_t(ta ? K : M) * lda, 1);
  const auto B = test::random_floats(size_t(tb ? N : K) * ldb, 2);
  const auto C0 = test::random_floats(size_t(M) * ldc, 3);
  const auto bias = test::random_floats(size_t(N), 4);
  std::vector<float> C = C0;
  const uint64_t calls = cpu::gemm_calls(GemmProvider::openblas);
  cpu::gemm_on(GemmProvider::openblas, DType::f32, ta, tb, M, N, K, alpha, A.data(), lda, B.data(),
               ldb, beta, C.data(), ldc, with_bias ? bias.data() : nullptr);
  EXPECT_EQ(cpu::gemm_calls(GemmProvider::openblas), calls + 1);
  test::Vec ref = test::to_double(C0);
  test::gemm_ref(ta, tb, M, N, K, alpha, test::to_double(A), lda, test::to_double(B), ldb, beta,
                 ref, ldc);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < ldc; ++j) {
      const size_t at = size_t(i) * ldc + j;
      if (j >= N)
        ASSERT_EQ(C[at], C0[at]) << "padding column " << j << " was written";
      else if (with_bias)
        ref[at] += bias[j];
    }
  EXPECT_LT(test::rel_err(C, ref), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    AllTransposes, OpenBlasGemm,
    ::testing::Values(Case{false, false, 1, 0, false}, Case{false, true, 1, 0, false},
                      Case{true, false, 1, 0, false}, Case{true, true, 1, 0, false},
                      Case{false, false, 1, 1, false}, Case{true, false, 1, 1, false},
                      Case{false, true, 0.5f, 0.5f, false}, Case{true, false, -2.0f, 1, false},
                      Case{false, true, 1, 0, true}, Case{true, true, 1, 0, true}));

// Large enough to be split over OpenMP threads (rows when M ≥ N, else columns),
// with blocks that are not multiples of 16: every transpose matches the naive GEMM.
TEST(OpenBlasGemm, SplitOverThreadsMatchesNaive) {
  if (auto why = openblas_missing()) GTEST_SKIP() << *why;
  for (const auto& [M, N] : {std::pair{301, 150}, {150, 301}})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        const int K = 33, lda = ta ? M : K, ldb = tb ? K : N;
        const auto A = test::random_floats(size_t(ta ? K : M) * lda, 11);
        const auto B = test::random_floats(size_t(tb ? N : K) * ldb, 12);
        const auto C0 = test::random_floats(size_t(M) * N, 13);
        std::vector<float> C = C0;
        cpu::gemm_on(GemmProvider::openblas, DType::f32, ta, tb, M, N, K, 1.0f, A.data(), lda,
                     B.data(), ldb, 1.0f, C.data(), N);
        test::Vec ref = test::to_double(C0);
        test::gemm_ref(ta, tb, M, N, K, 1.0, test::to_double(A), lda, test::to_double(B), ldb, 1.0,
                       ref, N);
        EXPECT_LT(test::rel_err(C, ref), 1e-5) << M << "x" << N << " ta=" << ta << " tb=" << tb;
      }
}

// bf16/fp16 go through fp32 scratch on OpenBLAS: the result is the fp32 GEMM of
// the rounded inputs, rounded once (bf16 1e-2, fp16 2e-3 relative).
TEST(OpenBlasGemm, LowPrecisionMatchesFp32) {
  if (auto why = openblas_missing()) GTEST_SKIP() << *why;
  const int M = 64, N = 96, K = 80;
  for (DType dt : {DType::bf16, DType::f16})
    for (bool ta : {false, true}) {
      const auto A = test::round_to(dt, test::random_floats(size_t(M) * K, 6));
      const auto B = test::round_to(dt, test::random_floats(size_t(K) * N, 7));
      const auto C0 = test::round_to(dt, test::random_floats(size_t(M) * N, 8));
      std::vector<float> C32 = C0;
      cpu::gemm_on(GemmProvider::onednn, DType::f32, ta, false, M, N, K, 1.0f, A.data(), ta ? M : K,
                   B.data(), N, 1.0f, C32.data(), N);
      test::Buf a(dt, A), b(dt, B), c(dt, C0);
      cpu::gemm_on(GemmProvider::openblas, dt, ta, false, M, N, K, 1.0f, a.data(), ta ? M : K,
                   b.data(), N, 1.0f, c.data(), N);
      EXPECT_LT(test::rel_err(c.get(), C32), dt == DType::bf16 ? 1e-2 : 2e-3);
    }
}

TEST(OpenBlasCore, IsChosenFromTheCpuFlags) {
  using cpu::openblas::core_type_for;
  EXPECT_EQ(core_type_for(
                {"Intel(R) Xeon(R) Processor",
                 {"avx2", "avx512_bf16", "avx512bw", "avx512dq", "avx512f", "avx512vl", "fma"}}),
            "SkylakeX");
  EXPECT_EQ(core_type_for({"AMD EPYC 7B13", {"avx", "avx2", "f16c", "fma"}}), "Zen");
  EXPECT_EQ(core_type_for({"Intel(R) Core(TM) i7-8700", {"avx", "avx2", "fma"}}), "Haswell");
  // AVX-512 F alone (Knights Landing) is not SkylakeX; no AVX2: OpenBLAS decides.
  EXPECT_EQ(core_type_for({"Intel Xeon Phi", {"avx2", "avx512f", "fma"}}), "Haswell");
  EXPECT_EQ(core_type_for({"Some CPU", {"sse4_2"}}), "");
}

// The library runs the core chosen for this CPU (or the user's OPENBLAS_CORETYPE),
// and the variable set for the load does not stay in the environment.
TEST(OpenBlasCore, LoadsWithTheCoreTypeOfThisCpu) {
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  if (auto why = openblas_missing()) GTEST_SKIP() << *why;
  const auto& lib = cpu::openblas::library();
  std::printf("OpenBLAS %s: core %s (%s)\n", lib.path.c_str(), lib.core.c_str(),
              lib.core_from.c_str());
  if (user) {
    EXPECT_EQ(lib.core_from, "OPENBLAS_CORETYPE set by the user");
    return;
  }
  EXPECT_EQ(std::getenv("OPENBLAS_CORETYPE"), nullptr);
  const std::string want = cpu::openblas::core_type_for(base::read_cpu_info());
  if (want.empty()) GTEST_SKIP() << "no core type is chosen for this CPU";
  EXPECT_EQ(lib.core, want);
}

class GemmRoutes : public ::testing::Test {
 protected:
  void TearDown() override { cpu::clear_gemm_routes(); }
  // One 8×8×8 fp32 cpu::gemm; returns the provider whose call count moved.
  static std::optional<GemmProvider> run(int M = 8) {
    const auto A = test::random_floats(size_t(M) * 8, 1), B = test::random_floats(64, 2);
    std::vector<float> C(size_t(M) * 8);
    const uint64_t one = cpu::gemm_calls(GemmProvider::onednn);
    const uint64_t blas = cpu::gemm_calls(GemmProvider::openblas);
    cpu::gemm(DType::f32, false, false, M, 8, 8, 1.0f, A.data(), 8, B.data(), 8, 0.0f, C.data(), 8);
    if (cpu::gemm_calls(GemmProvider::onednn) == one + 1) return GemmProvider::onednn;
    if (cpu::gemm_calls(GemmProvider::openblas) == blas + 1) return GemmProvider::openblas;
    return std::nullopt;
  }
};

TEST_F(GemmRoutes, OneDnnByDefault) { EXPECT_EQ(run(), GemmProvider::onednn); }

TEST_F(GemmRoutes, AForcedProviderRunsEveryShape) {
  if (auto why = openblas_missing()) GTEST_SKIP() << *why;
  cpu::force_gemm_provider(GemmProvider::openblas);
  EXPECT_EQ(run(8), GemmProvider::openblas);
  EXPECT_EQ(run(16), GemmProvider::openblas);
  cpu::force_gemm_provider(std::nullopt);
  EXPECT_EQ(run(8), GemmProvider::onednn);
}

TEST_F(GemmRoutes, ARoutedShapeRunsOnItsProviderOthersOnOneDnn) {
  if (auto why = openblas_missing()) GTEST_SKIP() << *why;
  cpu::route_gemm(GemmShape{DType::f32, false, false, 16, 8, 8}, GemmProvider::openblas);
  EXPECT_EQ(run(16), GemmProvider::openblas);
  EXPECT_EQ(run(8), GemmProvider::onednn);
}

TEST_F(GemmRoutes, CallsInsideAParallelRegionStayOnOneDnn) {
  if (auto why = openblas_missing()) GTEST_SKIP() << *why;
  cpu::force_gemm_provider(GemmProvider::openblas);
  const uint64_t blas = cpu::gemm_calls(GemmProvider::openblas);
  int ran = 0;
#pragma omp parallel num_threads(2) reduction(+ : ran)
  {
    const auto A = test::random_floats(64, 1), B = test::random_floats(64, 2);
    std::vector<float> C(64);
    cpu::gemm(DType::f32, false, false, 8, 8, 8, 1.0f, A.data(), 8, B.data(), 8, 0.0f, C.data(), 8);
    ran += omp_in_parallel() ? 1 : 0;
  }
  if (ran == 0) GTEST_SKIP() << "OpenMP ran the region on one thread";
  EXPECT_EQ(cpu::gemm_calls(GemmProvider::openblas), blas);
}

TEST(GemmShapeText, RoundTripsAndRejectsGarbage) {
  const GemmShape s{DType::bf16, false, true, 1024, 2304, 768};
  EXPECT_EQ(s.str(), "bf16 NT 1024x2304x768");
  EXPECT_EQ(GemmShape::parse(s.str()), s);
  for (const char* bad : {"", "bf16", "f64 NT 1x2x3", "bf16 NX 1x2x3", "bf16 NT 1x2",
                          "bf16 NT 1x2x", "bf16 NT 1x-2x3", "bf16  NT 1x2x3", "bf16 NT 1x2x3x4"})
    EXPECT_FALSE(GemmShape::parse(bad)) << bad;
}

class GemmSelectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("hybrid-gemm-cache-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    cpu::clear_gemm_routes();
    fs::remove_all(dir_);
  }
  fs::path cache() const { return dir_ / "gemm-providers.json"; }
  static nlohmann::json read(const fs::path& p) {
    std::ifstream in(p);
    return nlohmann::json::parse(in);
  }
  const std::vector<GemmShape> shapes_ = {{DType::f32, false, true, 64, 96, 32},
                                          {DType::bf16, true, false, 32, 64, 48}};
  fs::path dir_;
};

TEST_F(GemmSelectionTest, MeasuresOnceThenReusesTheCache) {
  const auto first = cpu::select_gemm_providers(shapes_, cache());
  ASSERT_EQ(first.measured, 2);
  ASSERT_EQ(first.choices.size(), 2u);
  for (const auto& c : first.choices) {
    EXPECT_FALSE(c.from_cache);
    ASSERT_FALSE(c.gflops.empty());
    // The choice is the fastest measured candidate, and cpu::gemm now follows it.
    double best = 0;
    for (const auto& [p, r] : c.gflops) best = std::max(best, r);
    for (const auto& [p, r] : c.gflops) {
      if (p == c.provider) {
        EXPECT_EQ(r, best);
      }
    }
    EXPECT_EQ(cpu::gemm_route(c.shape), c.provider);
  }
  const auto file = read(cache());
  EXPECT_EQ(file["format"], "hybrid-gemm-providers");
  EXPECT_TRUE(file["machines"].contains(first.machine));

  cpu::clear_gemm_routes();
  const auto second = cpu::select_gemm_providers(shapes_, cache());
  EXPECT_EQ(second.measured, 0);
  EXPECT_TRUE(second.warnings.empty() || second.warnings[0].find("OpenBLAS") != std::string::npos);
  for (size_t i = 0; i < shapes_.size(); ++i) {
    EXPECT_TRUE(second.choices[i].from_cache);
    EXPECT_EQ(second.choices[i].provider, first.choices[i].provider);
    EXPECT_EQ(cpu::gemm_route(shapes_[i]), first.choices[i].provider);
  }
}

TEST_F(GemmSelectionTest, ACorruptCacheIsIgnoredWithAWarningAndRewritten) {
  for (const char* bad :
       {"{\"format\": \"hybrid-gemm-prov", "[1, 2, 3]",
        R"({"format": "hybrid-gemm-providers", "version": 99, "machines": {}})"}) {
    std::ofstream(cache()) << bad;
    const auto sel = cpu::select_gemm_providers(shapes_, cache());
    EXPECT_EQ(sel.measured, 2) << bad;
    bool warned = false;
    for (const auto& w : sel.warnings)
      warned |= w.find("ignoring the provider cache " + cache().string()) != std::string::npos;
    EXPECT_TRUE(warned) << bad;
    EXPECT_EQ(read(cache())["version"], 2) << "rewritten as a valid cache";
  }
}

// Entries of other machines (a shared home directory) and unknown providers.
TEST_F(GemmSelectionTest, KeepsOtherMachinesAndRemeasuresAnUnknownProvider) {
  const std::string mine = cpu::gemm_machine_key();
  const std::string other = "Other CPU | avx2 | 64 threads | openblas Zen";
  nlohmann::json j = {{"format", "hybrid-gemm-providers"}, {"version", 2}};
  j["machines"][other]["f32 NN 8x8x8"]["provider"] = "openblas";
  j["machines"][mine][shapes_[0].str()]["provider"] = "mkl";
  std::ofstream(cache()) << j.dump();
  const auto sel = cpu::select_gemm_providers(shapes_, cache());
  EXPECT_EQ(sel.measured, 2);
  const auto file = read(cache());
  EXPECT_EQ(file["machines"][other]["f32 NN 8x8x8"]["provider"], "openblas");
  EXPECT_NE(file["machines"][mine][shapes_[0].str()]["provider"], "mkl");
}

TEST_F(GemmSelectionTest, AnUnwritableCacheIsAWarningNotAnError) {
  const fs::path blocked = dir_ / "a-file";
  std::ofstream(blocked) << "x";
  const auto sel = cpu::select_gemm_providers(shapes_, blocked / "gemm-providers.json");
  EXPECT_EQ(sel.measured, 2);
  bool warned = false;
  for (const auto& w : sel.warnings) warned |= w.find("was not written") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(GemmCachePath, FollowsHybridCacheDirThenXdg) {
  const char* old = std::getenv("HYBRID_CACHE_DIR");
  const std::string saved = old ? old : "";
  setenv("HYBRID_CACHE_DIR", "/some/dir", 1);
  EXPECT_EQ(cpu::default_gemm_cache_path(), fs::path("/some/dir/gemm-providers.json"));
  unsetenv("HYBRID_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(cpu::default_gemm_cache_path(), fs::path("/xdg/hybrid/gemm-providers.json"));
  unsetenv("XDG_CACHE_HOME");
  if (old) setenv("HYBRID_CACHE_DIR", saved.c_str(), 1);
}

}  // namespace
}  // namespace hybrid::kernels
