// Training behaviour through the real hybrid-train binary (under mpirun where
// it matters): learning below the data's unigram entropy, fp16 recovery from an
// absurd loss scale, bf16 training, and exact resume after the processes are
// killed.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine_test_util.h"

namespace hybrid {
namespace {

struct Run {
  int exit_code = -1;
  std::string output;
  nlohmann::json result;
};

Run hybrid_train(const test::TempDir& dir, const std::string& name, int ranks,
                 const nlohmann::json& patch, const std::string& args) {
  const std::string cfg = dir / (name + ".json"), res = dir / (name + ".result.json");
  test::write_json(cfg, test::tiny_config_json(patch));
  std::filesystem::remove(res);
  Run r;
  const auto c = test::run_command(test::launcher(ranks) + test::tool("hybrid-train") +
                                   " --config " + cfg + " --result " + res + " " + args);
  r.exit_code = c.exit_code;
  r.output = c.output;
  if (std::filesystem::exists(res)) r.result = test::read_json(res);
  return r;
}

std::vector<double> losses(const Run& r) {
  return r.result.at("losses").get<std::vector<double>>();
}

TEST(Training, LearnsFarBelowTheUnigramEntropy) {
  // A sparse Markov chain: a model that learns the transitions approaches the
  // entropy rate, far below what token frequencies alone (unigram) allow.
  test::TempDir dir;
  const auto r = hybrid_train(
      dir, "learn", 1,
      {{"train_micro_batch_size_per_gpu", 8},
       {"optimizer", {{"params", {{"lr", 3e-3}, {"weight_decay", 0.0}}}}},
       {"hybrid",
        {{"model", {{"n_embd", 64}, {"n_head", 4}, {"vocab_size", 64}, {"seq_len", 32}}}}}},
      "--quiet --steps 150");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const double unigram = r.result.at("data").at("unigram_entropy");
  const double rate = r.result.at("data").at("entropy_rate");
  const auto l = losses(r);
  double tail = 0;
  for (size_t i = l.size() - 10; i < l.size(); ++i) tail += l[i] / 10;
  std::printf(
      "unigram entropy %.3f nats, entropy rate %.3f, initial loss %.3f, final loss (last 10) "
      "%.3f\n",
      unigram, rate, l.front(), tail);
  EXPECT_NEAR(l.front(), std::log(64.0), 0.1);
  EXPECT_LT(tail, unigram - 1.0);           // learned transitions, not just frequencies
  EXPECT_LT(tail, 0.5 * (unigram + rate));  // more than halfway from unigram to the floor
}

TEST(Training, Fp16RecoversFromAnAbsurdLossScaleAndTrains) {
  test::TempDir dir;
  const auto r =
      hybrid_train(dir, "fp16", 2,
                   {{"fp16", {{"enabled", true}, {"initial_scale_power", 40}, {"hysteresis", 1}}},
                    {"optimizer", {{"params", {{"lr", 3e-3}}}}},
                    {"zero_optimization", {{"stage", 2}}}},
                   "--quiet --steps 60");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const int64_t skipped = r.result.at("skipped_steps");
  // 2^40 overflows fp16 at once; each skipped step halves it until gradients fit.
  EXPECT_GE(skipped, 10);
  EXPECT_LT(skipped, 40);
  const auto l = losses(r);
  EXPECT_LT(l.back(), l.front() - 0.3) << "it trained after recovering";
}

TEST(Training, Bf16Trains) {
  test::TempDir dir;
  const auto r = hybrid_train(dir, "bf16", 2,
                              {{"bf16", {{"enabled", true}}},
                               {"optimizer", {{"params", {{"lr", 3e-3}}}}},
                               {"zero_optimization", {{"stage", 3}}}},
                              "--quiet --steps 40");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result.at("skipped_steps"), 0);
  const auto l = losses(r);
  EXPECT_LT(l.back(), l.front() - 0.3);
}

// Train 20 steps; separately train 10, checkpoint, SIGKILL every process, load
// and train 10 more: steps 11–20 have bitwise identical losses.
class ExactResume : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(ExactResume, LossesAfterAKilledRunAreBitwiseIdentical) {
  const auto [stage, dtype] = GetParam();
  test::TempDir dir;
  nlohmann::json patch = {{"zero_optimization", {{"stage", stage}, {"overlap_comm", true}}},
                          {dtype, {{"enabled", true}}},
                          {"gradient_accumulation_steps", 2},
                          {"optimizer", {{"params", {{"lr", 2e-3}}}}}};
  const auto full = hybrid_train(dir, "full", 2, patch, "--quiet --steps 20");
  ASSERT_EQ(full.exit_code, 0) << full.output;

  const std::string ckpt = dir / "ckpt";
  const auto killed =
      hybrid_train(dir, "first", 2, patch,
                   "--quiet --steps 20 --save " + ckpt + " --save-every 10 --kill-after-step 10");
  EXPECT_NE(killed.exit_code, 0) << "the processes were meant to die";
  EXPECT_TRUE(killed.result.is_null()) << "a killed run writes no result";

  const auto resumed = hybrid_train(dir, "second", 2, patch, "--quiet --steps 10 --load " + ckpt);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(resumed.result.at("global_step"), 20);
  const auto a = losses(full), b = losses(resumed);
  ASSERT_EQ(b.size(), 10u);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(b[i], a[10 + i]) << "step " << 11 + i;
}

TEST(Training, ACheckpointLoadsUnderAnotherWorldSizeAndStage) {
  // Partitions are flat ranges: 2 ranks at stage 3 save, 1 rank at stage 1
  // loads (same global batch: micro 2 × accumulation 2). The continuation
  // matches the uninterrupted 2-rank run up to reduction order.
  test::TempDir dir;
  nlohmann::json two = {{"zero_optimization", {{"stage", 3}}},
                        {"optimizer", {{"params", {{"lr", 2e-3}}}}}};
  nlohmann::json one = {{"zero_optimization", {{"stage", 1}}},
                        {"gradient_accumulation_steps", 2},
                        {"optimizer", {{"params", {{"lr", 2e-3}}}}}};
  const auto full = hybrid_train(dir, "full", 2, two, "--quiet --steps 8");
  ASSERT_EQ(full.exit_code, 0) << full.output;
  const std::string ckpt = dir / "ckpt";
  const auto first = hybrid_train(dir, "first", 2, two, "--quiet --steps 4 --save " + ckpt);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const auto second = hybrid_train(dir, "second", 1, one, "--steps 4 --load " + ckpt);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("saved with 2 ranks, now 1"), std::string::npos) << second.output;
  const auto a = losses(full), b = losses(second);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(b[i], a[4 + i], 1e-5) << "step " << 5 + i;
}

INSTANTIATE_TEST_SUITE_P(Stages, ExactResume,
                         ::testing::Combine(::testing::Values(0, 3),
                                            ::testing::Values("fp16", "bf16")));

}  // namespace
}  // namespace hybrid
