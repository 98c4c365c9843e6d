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

using test::losses;

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
  p.merge_patch(test::kAdamForComparedRuns);
  if (!extra.is_null()) p.merge_patch(extra);
  return p;
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
    const double rel = test::max_relative_difference(run.weights, ref.weights);
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
  // The stages' files tile the parameters once: one process without a pipeline
  // continues from them.
  test::expect_killed_run_resumes(dir, 4, patch, pipe_patch(1, 1), full);
}

// 16-bit: the stages agree on fp16's overflow (the first step's scale 2^17
// overflows, so both runs skip it) and track the one-process run within the
// dtype's rounding; bf16 likewise.
TEST(Pipeline, SixteenBitStagesSkipTheSameStepsAndTrackOneProcess) {
  test::TempDir dir;
  for (auto [name, patch, tolerance] :
       {std::tuple{"fp16",
                   nlohmann::json{{"fp16", {{"enabled", true}, {"initial_scale_power", 17}}}},
                   1e-4},
        std::tuple{"bf16", nlohmann::json{{"bf16", {{"enabled", true}}}}, 2e-3}}) {
    const auto ref = test::run_hybrid_train(dir, std::string(name) + "_ref", 1,
                                            pipe_patch(1, 1, patch), "--quiet --steps 6");
    const auto run = test::run_hybrid_train(dir, std::string(name) + "_pp2", 2,
                                            pipe_patch(2, 1, patch), "--quiet --steps 6");
    ASSERT_EQ(ref.exit_code, 0) << ref.output;
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_EQ(run.result.at("skipped_steps"), ref.result.at("skipped_steps")) << name;
    if (std::string(name) == "fp16") {
      EXPECT_GT(ref.result.at("skipped_steps").get<int>(), 0);
    }
    const auto a = losses(run), b = losses(ref);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tolerance) << name << " " << i;
  }
}

// Rank 0 is stage 0, data-parallel rank 0. Per step it sends each micro-batch's
// activation and receives its gradient (B·T·C floats each); the tied embedding
// (V·C) is summed with the last stage; ZeRO-1 reduce-scatters and all-gathers
// exactly the stage's own parameters (embeddings and its blocks) over dp; the
// norm agreement is 2 floats over pp, the loss 1 float broadcast over pp and
// 1 averaged over the world.
TEST(Pipeline, BytesPerStepPerGroupEqualTheClosedForms) {
  test::TempDir dir;
  const int64_t B = 2, T = 16, C = 32, Vp = 128, m = kMicroBatches / 2;
  const auto run = test::run_hybrid_train(dir, "bytes", 4,
                                          pipe_patch(2, 2, {{"zero_optimization", {{"stage", 1}}}}),
                                          "--quiet --steps 3");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto& g = run.result.at("comm_bytes_per_step_by_group");
  const double activation = double(B * T * C * 4);
  const int64_t block = 12 * C * C + 13 * C, embeddings = Vp * C + T * C;
  const double stage0 = double(embeddings + 2 * block) * 4;  // blocks h.0-1 (parameters method)
  EXPECT_EQ(g.at("pp").at("send").get<double>(), m * activation);
  EXPECT_EQ(g.at("pp").at("recv").get<double>(), m * activation);
  EXPECT_EQ(g.at("pp").at("all_reduce").get<double>(), 8.0);
  EXPECT_EQ(g.at("pp").at("broadcast").get<double>(), 4.0);
  EXPECT_EQ(g.at("tied").at("all_reduce").get<double>(), double(Vp * C * 4));
  EXPECT_EQ(g.at("dp").at("reduce_scatter").get<double>(), stage0);
  EXPECT_EQ(g.at("dp").at("all_gather").get<double>(), stage0);
  EXPECT_EQ(g.at("dp").at("all_reduce").get<double>(), 8.0);  // ZeRO-1's norm agreement
  EXPECT_EQ(g.at("world").at("all_reduce").get<double>(), 4.0);
  for (const char* kind : {"send", "recv", "reduce_scatter", "all_gather"})
    EXPECT_EQ(g.at("world").at(kind).get<double>(), 0.0) << kind;
}

}  // namespace
}  // namespace hybrid
