// hybrid-tune generate's noise rule (autotune/generate_confirm.h): a trial's
// interval is its median decode step's distribution-free 95 % interval carried
// over to the metric, checked against the order statistics worked out by hand;
// ties are the trials overlapping the best's; a confirmation's best median
// wins and holds only when its worst value beats every other's best.
#include "autotune/generate_confirm.h"

#include <gtest/gtest.h>

namespace hybrid::autotune {
namespace {

// An ok trial of `value` whose 20 decode steps are center + (i - 9.5) * step.
GenerateTrial trial(double value, double center, double step) {
  GenerateTrial t;
  t.status = "ok";
  t.value = value;
  for (int i = 0; i < 20; ++i) t.tpot_ms.push_back(center + (i - 9.5) * step);
  return t;
}

TEST(GenerateConfirm, AnIntervalIsTheMedianStepsOrderStatisticsInTheMetricsUnits) {
  // n = 20: P(X <= 5) = 0.0207 <= 0.025 < P(X <= 6) = 0.0577 for X ~ B(20, 1/2),
  // so the interval is [x(6), x(15)]: 10 - 4.5 step and 10 + 4.5 step.
  const GenerateTrial t = trial(100, 10.0, 0.1);
  const auto tokens = generate_interval(Metric::tokens, t);
  ASSERT_TRUE(tokens);
  EXPECT_NEAR(tokens->lo, 100 * 10.0 / 10.45, 1e-9);  // a rate: the slow end bounds it below
  EXPECT_NEAR(tokens->hi, 100 * 10.0 / 9.55, 1e-9);
  const auto p99 = generate_interval(Metric::latency, t);
  ASSERT_TRUE(p99);
  EXPECT_NEAR(p99->lo, 100 * 9.55 / 10.0, 1e-9);
  EXPECT_NEAR(p99->hi, 100 * 10.45 / 10.0, 1e-9);
  GenerateTrial untimed = t;
  untimed.tpot_ms.clear();
  EXPECT_FALSE(generate_interval(Metric::tokens, untimed));
}

TEST(GenerateConfirm, TiesAreTheOkTrialsOverlappingTheBestsInterval) {
  GenerateSweepResult r;
  r.trials = {trial(100, 10.0, 0.05), trial(98, 10.1, 0.05), trial(50, 20.0, 0.05), {}};
  r.best = 0;  // trial 3 is pruned
  EXPECT_EQ(generate_ties(Metric::tokens, r, 3, false), (std::vector<size_t>{0, 1}));
  EXPECT_TRUE(generate_ties(Metric::tokens, r, 1, false).empty()) << "the best alone";
  r.trials[1] = trial(60, 17.0, 0.05);  // now clear of the best
  EXPECT_TRUE(generate_ties(Metric::tokens, r, 3, false).empty());
  // --confirm-best: the runner-up (60 beats 50) joins the best.
  EXPECT_EQ(generate_ties(Metric::tokens, r, 3, true), (std::vector<size_t>{0, 1}));
  r.best.reset();
  EXPECT_TRUE(generate_ties(Metric::tokens, r, 3, true).empty());
}

TEST(GenerateConfirm, TheBestMedianWinsAndHoldsOnlyClearOfTheOthers) {
  // tokens/s: medians 96 and 100.5; 99 (the winner's worst) does not beat 100.
  auto c = decide_generate_confirmation(Metric::tokens, {4, 7},
                                        {{100, 90, 95, 97}, {99, 101, 102, 100}}, 3);
  EXPECT_EQ(c.tied[c.winner], 7u);
  EXPECT_DOUBLE_EQ(c.medians[1], 100.5);
  EXPECT_FALSE(c.decided);
  c = decide_generate_confirmation(Metric::tokens, {4, 7}, {{80, 82, 81}, {100, 99, 101}}, 2);
  EXPECT_EQ(c.winner, 1u);
  EXPECT_TRUE(c.decided);
  // p99 latency, lower is better: 12 (the first's worst) beats 13.
  c = decide_generate_confirmation(Metric::latency, {0, 1}, {{10, 11, 12}, {13, 14, 15}}, 2);
  EXPECT_EQ(c.winner, 0u);
  EXPECT_TRUE(c.decided);
  // A candidate whose every run failed cannot win.
  c = decide_generate_confirmation(Metric::tokens, {0, 1}, {{}, {50}}, 1);
  EXPECT_EQ(c.winner, 1u);
  EXPECT_TRUE(c.decided);
}

}  // namespace
}  // namespace hybrid::autotune
