// The CPU GEMM provider of a training run (engine/cpu_gemm.h): the model's GEMM
// shapes, a forced provider running the step, the measured choice cached across
// runs (one process and two ranks), and a bad HYBRID_GEMM named. The suite runs
// with HYBRID_GEMM=onednn (tests/CMakeLists.txt); these tests unset it.
#include "engine/cpu_gemm.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "engine_test_util.h"
#include "kernels/cpu/gemm_provider.h"
#include "profiler/store/run_store.h"

namespace hybrid {
namespace {

using kernels::cpu::GemmProvider;
using kernels::cpu::GemmShape;

// Sets (or unsets, with nullptr) an environment variable for one test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { old_ ? setenv(name_, old_->c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

bool openblas_here() { return kernels::cpu::provider_available(GemmProvider::openblas); }

// A vocabulary whose padded size (256) is no other layer's width, so the LM head's
// GEMMs are shapes of their own.
// Two OpenMP threads per rank also on two ranks: threads are part of the cache key.
const nlohmann::json kVocab200 = {{"hybrid", {{"model", {{"vocab_size", 200}}}, {"threads", 2}}}};

// Five Linear modules (qkv, attention projection, fc, fc projection, LM head)
// with three GEMMs each, shared across layers: 15 shapes for M = B·T.
TEST(CpuGemm, ModelShapesAreTheThreeGemmsOfEveryLinear) {
  const auto cfg = test::tiny_config(kVocab200);
  const auto e = initialize(cfg, make_model(cfg), test::quiet());
  const int B = cfg.train_micro_batch_size_per_gpu, T = cfg.seq_len(), C = cfg.model.n_embd;
  const int Vp = (cfg.model.vocab_size + 127) / 128 * 128;
  const auto shapes = engine::model_gemm_shapes(e->module_tree(), kernels::DType::bf16, B, T);
  EXPECT_EQ(shapes.size(), 15u);
  const auto has = [&](GemmShape s) {
    return std::find(shapes.begin(), shapes.end(), s) != shapes.end();
  };
  using kernels::DType;
  EXPECT_TRUE(has({DType::bf16, false, true, B * T, 3 * C, C}));   // qkv forward
  EXPECT_TRUE(has({DType::bf16, false, false, B * T, C, 4 * C}));  // fc projection: din
  EXPECT_TRUE(has({DType::bf16, true, false, 4 * C, C, B * T}));   // fc: dW
  EXPECT_TRUE(has({DType::bf16, true, false, Vp, C, B * T}));      // LM head: dW
}

TEST(CpuGemm, AForcedProviderRunsEveryLinearGemmOfTheStep) {
  if (!openblas_here()) GTEST_SKIP() << "OpenBLAS cannot load";
  ScopedEnv env("HYBRID_GEMM", nullptr);
  const auto cfg = test::tiny_config({{"hybrid", {{"gemm", "openblas"}}}});
  const auto e = initialize(cfg, make_model(cfg), test::quiet());
  EXPECT_EQ(e->gemm_report()["mode"], "openblas");
  EXPECT_EQ(e->gemm_report()["source"], "hybrid.gemm");
  const uint64_t before = kernels::cpu::gemm_calls(GemmProvider::openblas);
  test::train_on_fixed_batch(*e, 1);
  // 2 layers × 4 Linear × 3 GEMMs + the LM head's 2 or 3: at least 26 on OpenBLAS.
  EXPECT_GE(kernels::cpu::gemm_calls(GemmProvider::openblas) - before, 26u);
  kernels::cpu::clear_gemm_routes();
}

// The same training on either provider: the GEMMs sum in different orders, so
// the losses agree to fp32 rounding (1e-5 relative over 5 steps), not bit for bit.
TEST(CpuGemm, TrainingOnOpenBlasMatchesOneDnn) {
  if (!openblas_here()) GTEST_SKIP() << "OpenBLAS cannot load";
  ScopedEnv env("HYBRID_GEMM", nullptr);
  std::vector<float> losses[2];
  for (int i = 0; i < 2; ++i) {
    const auto cfg = test::tiny_config({{"hybrid", {{"gemm", i ? "openblas" : "onednn"}}}});
    const auto e = initialize(cfg, make_model(cfg), test::quiet());
    losses[i] = test::train_on_changing_batches(*e, 5);
  }
  ASSERT_EQ(losses[0].size(), losses[1].size());
  for (size_t s = 0; s < losses[0].size(); ++s)
    EXPECT_NEAR(losses[1][s], losses[0][s], 1e-5 * std::abs(losses[0][s])) << "step " << s;
  kernels::cpu::clear_gemm_routes();
}

TEST(CpuGemm, TheEnvironmentOverridesTheConfigAndABadValueIsNamed) {
  {
    ScopedEnv env("HYBRID_GEMM", "onednn");
    const auto cfg = test::tiny_config({{"hybrid", {{"gemm", "openblas"}}}});
    const auto e = initialize(cfg, make_model(cfg), test::quiet());
    EXPECT_EQ(e->gemm_report()["mode"], "onednn");
    EXPECT_EQ(e->gemm_report()["source"], "HYBRID_GEMM");
  }
  ScopedEnv env("HYBRID_GEMM", "mkl");
  try {
    const auto cfg = test::tiny_config();
    initialize(cfg, make_model(cfg), test::quiet());
    ADD_FAILURE() << "HYBRID_GEMM=mkl was accepted";
  } catch (const engine::ConfigError& err) {
    EXPECT_NE(std::string(err.what()).find("HYBRID_GEMM must be one of"), std::string::npos)
        << err.what();
  }
  kernels::cpu::clear_gemm_routes();
}

TEST(CpuGemm, TheBf16OnlyProviderIsRefusedForAnFp32Run) {
  if (!kernels::cpu::provider_available(GemmProvider::avx512bf16))
    GTEST_SKIP() << "the CPU has no AVX512_BF16";
  ScopedEnv env("HYBRID_GEMM", nullptr);
  const auto cfg = test::tiny_config({{"hybrid", {{"gemm", "avx512bf16"}}}});
  try {
    initialize(cfg, make_model(cfg), test::quiet());
    ADD_FAILURE() << "an fp32 run forced onto the bf16 kernel was accepted";
  } catch (const engine::ConfigError& err) {
    EXPECT_NE(std::string(err.what()).find("hybrid.gemm = \"avx512bf16\" computes bf16 only"),
              std::string::npos)
        << err.what();
  }
  kernels::cpu::clear_gemm_routes();
}

TEST(CpuGemm, AnUnknownConfigValueIsNamed) {
  try {
    test::tiny_config({{"hybrid", {{"gemm", "blis"}}}});
    ADD_FAILURE() << "hybrid.gemm = blis was accepted";
  } catch (const engine::ConfigError& err) {
    EXPECT_NE(std::string(err.what()).find("hybrid.gemm"), std::string::npos) << err.what();
  }
}

// hybrid-train with "auto": the first run measures every shape and writes the
// cache; the second (two ranks: rank 0 reads, rank 1 follows) measures nothing.
TEST(CpuGemm, AutoMeasuresOnceAndLaterRunsReuseTheCache) {
  test::TempDir dir;
  ScopedEnv gemm("HYBRID_GEMM", nullptr);
  ScopedEnv cache("HYBRID_CACHE_DIR", std::string(dir / "cache").c_str());
  const auto first =
      test::run_hybrid_train(dir, "first", 1, kVocab200, "--steps 2 --db " + (dir / "runs.db"));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  {  // the run store keeps the same report in the run's summary
    profiler::RunStore store(dir / "runs.db", profiler::OpenMode::read_only);
    const auto runs = store.list_runs();
    ASSERT_EQ(runs.size(), 1u);
    const auto summary = nlohmann::json::parse(runs[0].summary_json);
    EXPECT_EQ(summary["gemm"], first.result["gemm"]);
  }
  const auto& g1 = first.result["gemm"];
  ASSERT_EQ(g1["mode"], "auto") << first.result.dump();
  ASSERT_EQ(g1["shapes"].size(), 15u);
  for (const auto& [shape, c] : g1["shapes"].items()) {
    EXPECT_FALSE(c["cached"].get<bool>()) << shape;
    EXPECT_GE(c["gflops"].size(), 1u) << shape;
  }
  EXPECT_TRUE(std::filesystem::exists(dir / "cache/gemm-providers.json"));

  const auto second = test::run_hybrid_train(dir, "second", 2, kVocab200, "--steps 2");
  ASSERT_EQ(second.exit_code, 0) << second.output;
  for (const auto& [shape, c] : second.result["gemm"]["shapes"].items()) {
    EXPECT_TRUE(c["cached"].get<bool>()) << shape;
    EXPECT_EQ(c["provider"], g1["shapes"][shape]["provider"]) << shape;
  }
  EXPECT_NE(second.output.find("0 measured now, 15 from"), std::string::npos) << second.output;
}

}  // namespace
}  // namespace hybrid
