// `hybrid-tune predict`: the confidence it states against observations built
// from known weights (the held-out extrapolation error, scaled by doublings),
// and the command line on a store of real sweeps at two world sizes.
#include "autotune/predict.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tune_test_util.h"

namespace hybrid::autotune {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// Observations whose times are exactly the prior weights times their features,
// those at `world_scaled` ranks then multiplied by `scale`.
std::vector<Observation> synthetic(double scale, int world_scaled) {
  std::vector<Observation> obs;
  const Weights w = prior_weights();
  for (int world : {2, 4})
    for (int i = 0; i < 4; ++i) {
      Observation o;
      o.key = fmt::format("c{}", i);
      o.layout = {world, 1, world};
      for (size_t f = 0; f < kFeatureCount; ++f)
        o.features.x[f] = 1e-3 * (1 + double((i * 7 + int(f) * 3) % 5)) * (f == 0 ? world : 1);
      for (size_t f = 0; f < kFeatureCount; ++f) o.step_s += w[f] * o.features.x[f];
      if (world == world_scaled) o.step_s *= scale;
      obs.push_back(o);
    }
  return obs;
}

TEST(PredictConfidence, ExactModelIsHighAndZeroError) {
  const Confidence c = confidence_of(synthetic(1.0, 0), 64);
  EXPECT_EQ(c.level, "high");
  EXPECT_NEAR(c.expected_error, 0.0, 1e-6);
}

// The world-4 trials run 20 % slower than the world-2 fit says: held out, they
// are predicted 1/1.2 − 1 = −16.7 % off; 8 ranks is one more doubling (the same
// error), 16 ranks two (twice it).
TEST(PredictConfidence, HeldOutErrorScalesWithTheDoublingsAhead) {
  const auto obs = synthetic(1.2, 4);
  CostModel all;
  for (const auto& o : obs) all.observe(o.features, o.step_s);
  const double fit = all.mean_relative_error();
  const double held = 1.0 - 1.0 / 1.2;
  const Confidence c8 = confidence_of(obs, 8), c16 = confidence_of(obs, 16),
                   c4 = confidence_of(obs, 4);
  EXPECT_NEAR(c8.expected_error, std::max(fit, held), 1e-6);
  EXPECT_EQ(c8.level, "medium");
  EXPECT_NEAR(c16.expected_error, std::max(fit, 2 * held), 1e-6);
  EXPECT_EQ(c16.level, "low");
  EXPECT_NEAR(c4.expected_error, fit, 1e-9);  // within the measured range: the fit's own error
  ASSERT_EQ(c8.reasons.size(), 1u);
  EXPECT_THAT(c8.reasons[0], HasSubstr("within 16.7 %"));
}

TEST(PredictConfidence, OneWorldOrNoTrialsIsLow) {
  auto obs = synthetic(1.0, 0);
  std::erase_if(obs, [](const Observation& o) { return o.layout.world == 4; });
  const Confidence one = confidence_of(obs, 8);
  EXPECT_EQ(one.level, "low");
  EXPECT_THAT(one.reasons.at(0), HasSubstr("one world size only (2 ranks)"));
  EXPECT_EQ(confidence_of(obs, 2).level, "high");  // the measured world itself
  const Confidence none = confidence_of({}, 8);
  EXPECT_EQ(none.level, "low");
  EXPECT_EQ(none.expected_error, 1.0);
}

TEST(PredictCli, BadOptionsAreNamed) {
  test::TempDir dir;
  test::write_json(dir / "cfg.json", test::tiny_config());
  const std::string base =
      fmt::format("{} predict --config {}", test::tune_bin(), dir / "cfg.json");
  auto r = test::run_command(base + " --world 0 --db " + (dir / "x.db"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("--world must be >= 1, got 0"));
  r = test::run_command(base + " --world 4 --hosts 5 --db " + (dir / "x.db"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("--hosts must be between 1 and --world (4), got 5"));
  r = test::run_command(base + " --world 4 --db " + (dir / "x.db"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("no run store at " + (dir / "x.db")));
  EXPECT_FALSE(std::filesystem::exists(dir / "x.db"));
}

// Real sweeps at 1 and 2 ranks and a probe at 2; predict ranks the candidates
// for 4 ranks, says what it was fitted to, and warns when the target spans
// hosts that no probe measured.
TEST(PredictCli, RanksCandidatesForALargerWorldFromSweepsAtTwoSizes) {
  test::TempDir dir;
  test::write_json(dir / "cfg.json", test::tiny_config());
  test::write_json(dir / "space.json", json::parse(R"({"mbs": [1, 2], "stage": [1]})"));
  const std::string db = dir / "tune.db";
  auto r = test::run_command(
      fmt::format("{} probe --nprocs 2 --max-message 65536 --db {}", test::tune_bin(), db));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int n : {1, 2}) {
    r = test::run_command(fmt::format(
        "{} --config {} --space {} --nprocs {} --steps 6 --start-step 2 --early-stop 0 "
        "--no-probe --confirm-rounds 0 --db {} --out {}",
        test::tune_bin(), dir / "cfg.json", dir / "space.json", n, db, dir / "best.json"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const std::string predict =
      fmt::format("{} predict --config {} --space {} --db {}", test::tune_bin(), dir / "cfg.json",
                  dir / "space.json", db);
  r = test::run_command(predict + " --world 4");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("predicting 4 ranks on 1 host(s) (4 per host)"));
  EXPECT_THAT(r.output, HasSubstr("fitted to 4 trial(s) (2 at 1, 2 at 2 ranks)"));
  EXPECT_THAT(r.output, HasSubstr("4 ranks is 1.0 doubling(s) past 2"));
  EXPECT_THAT(r.output,
              ::testing::ContainsRegex("confidence: (high|medium|low) \\(expected error"));
  EXPECT_THAT(r.output, HasSubstr("mbs=1,gas=1,stage=1"));
  EXPECT_THAT(r.output, HasSubstr("mbs=2,gas=1,stage=1"));

  r = test::run_command(predict + " --world 4 --hosts 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("predicting 4 ranks on 2 host(s) (2 per host)"));
  EXPECT_THAT(r.output, HasSubstr("confidence: low"));
  EXPECT_THAT(r.output, HasSubstr("the probe measured no link between hosts"));
}

}  // namespace
}  // namespace hybrid::autotune
