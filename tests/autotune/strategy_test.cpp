// Strategy selection on synthetic objectives (no processes): grid order, a
// seeded random order, and the model strategy finding the optimum of a
// well-specified cost surface in few trials, for higher- and lower-is-better metrics.
#include "autotune/strategy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "autotune/candidate.h"
#include "autotune/tune_error.h"
#include "tune_test_util.h"

namespace hybrid::autotune {
namespace {

using nlohmann::json;

std::vector<size_t> all_indices(size_t n) {
  std::vector<size_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

// Runs a strategy to the end against an objective; returns the order of trials.
template <class Objective>
std::vector<size_t> drive(Strategy& s, size_t n, Objective&& step_s_of, Metric m,
                          const std::vector<StepFeatures>* f) {
  std::vector<size_t> remaining = all_indices(n), order;
  std::vector<Observation> history;
  while (auto pick = s.next(remaining, history)) {
    order.push_back(*pick);
    remaining.erase(std::find(remaining.begin(), remaining.end(), *pick));
    const double t = step_s_of(*pick);
    const double metric =
        f ? metric_from_step_time(m, t, (*f)[*pick].samples_per_step, (*f)[*pick].tokens_per_step,
                                  (*f)[*pick].flops_per_step)
          : t;
    history.push_back({*pick, true, metric, t});
  }
  return order;
}

TEST(Strategy, GridRunsEveryCandidateInOrder) {
  auto g = make_grid_strategy();
  EXPECT_EQ(drive(
                *g, 5, [](size_t) { return 1.0; }, Metric::latency, nullptr),
            all_indices(5));
  EXPECT_EQ(g->next({}, {}), std::nullopt);
}

TEST(Strategy, RandomIsASeededPermutation) {
  const auto a = seeded_permutation(20, 7), b = seeded_permutation(20, 7),
             c = seeded_permutation(20, 8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(std::set<size_t>(a.begin(), a.end()).size(), 20u);
  EXPECT_NE(a, all_indices(20));
  auto r = make_random_strategy(7, 20);
  EXPECT_EQ(drive(
                *r, 20, [](size_t) { return 1.0; }, Metric::latency, nullptr),
            a);
  // Resumed with some already tried, it continues the same order.
  auto r2 = make_random_strategy(7, 20);
  std::vector<size_t> rest(a.begin() + 5, a.end());
  EXPECT_EQ(r2->next(rest, {}), a[5]);
  EXPECT_EQ(parse_strategy("model_based"), "model");
  EXPECT_THROW(parse_strategy("bayes"), TuneError);
}

// Candidates of a real space over a tiny GPT-2, with real features.
std::vector<StepFeatures> grid_features(int world) {
  const auto e = enumerate_candidates(
      test::tiny_config(),
      parse_space(
          json::parse(R"({"mbs": [1, 2, 4, 8, 16], "gas": [1, 2], "stage": [0, 1, 2, 3]})")),
      test::world(world));
  std::vector<StepFeatures> f;
  for (const auto& c : e.candidates)
    f.push_back(step_features(c.parsed, world, default_rates(kernels::BackendKind::cpu, world)));
  return f;
}

TEST(Strategy, ModelFindsTheOptimumOfAWellSpecifiedSurfaceInFewTrials) {
  const auto f = grid_features(2);
  ASSERT_EQ(f.size(), 40u);
  // The "machine": weights unlike the prior (compute 3x slower, overhead 40x larger).
  const Weights truth{3.0, 2.0, 0.1, 40.0, 1.5};
  auto step_s = [&](size_t i) {
    double t = 0;
    for (size_t j = 0; j < kFeatureCount; ++j) t += truth[j] * f[i].x[j];
    return t;
  };
  for (Metric m : {Metric::throughput, Metric::latency}) {
    size_t best = 0;
    for (size_t i = 1; i < f.size(); ++i) {
      const auto val = [&](size_t k) {
        return metric_from_step_time(m, step_s(k), f[k].samples_per_step, f[k].tokens_per_step,
                                     f[k].flops_per_step);
      };
      if (better(m, val(i), val(best))) best = i;
    }
    ModelStrategyOptions mo;
    mo.metric = m;
    auto s = make_model_strategy(f, mo);
    const auto order = drive(*s, f.size(), step_s, m, &f);
    EXPECT_NE(std::find(order.begin(), order.end(), best), order.end()) << metric_name(m);
    EXPECT_LE(order.size(), f.size() / 4)
        << metric_name(m) << ": the model stops by itself, well before the grid";
    EXPECT_FALSE(s->stop_reason().empty());
    // The model fits what it measured (the surface is in its span).
    for (size_t i : order) EXPECT_NEAR(*s->predicted_step_s(i), step_s(i), step_s(i) * 0.02) << i;
  }
}

TEST(Strategy, ModelSkipsFailedTrialsWhenFitting) {
  const auto f = grid_features(2);
  ModelStrategyOptions mo;
  auto s = make_model_strategy(f, mo);
  const auto first = s->next(all_indices(f.size()), {});
  ASSERT_TRUE(first);
  // A failed first trial (no measurement): the model still proposes something else.
  std::vector<size_t> rest;
  for (size_t i = 0; i < f.size(); ++i)
    if (i != *first) rest.push_back(i);
  const auto second = s->next(rest, {Observation{*first, false, 0, 0}});
  ASSERT_TRUE(second);
  EXPECT_NE(*second, *first);
}

}  // namespace
}  // namespace hybrid::autotune
