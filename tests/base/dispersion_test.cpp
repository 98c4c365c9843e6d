// Dispersion figures against hand-computed values and closed forms: type-7
// quantiles, the MAD, the sample CV, and the median's order-statistic interval
// against the binomial(n, 1/2) tail summed exactly and against simulation.
#include "base/dispersion.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace hybrid::base {
namespace {

TEST(Dispersion, QuantilesInterpolateBetweenOrderStatistics) {
  const std::vector<double> v = {7, 1, 3, 5};  // sorted 1 3 5 7
  EXPECT_DOUBLE_EQ(quantile(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(quantile(v, 1.0), 7.0);
  EXPECT_DOUBLE_EQ(quantile(v, 0.25), 2.5);  // h = 0.75: 1 + 0.75 (3 - 1)
  EXPECT_DOUBLE_EQ(quantile(v, 0.5), 4.0);
  EXPECT_DOUBLE_EQ(quantile(v, 0.75), 5.5);
  EXPECT_DOUBLE_EQ(quantile(std::vector<double>{}, 0.5), 0.0);
  EXPECT_DOUBLE_EQ(quantile(std::vector<double>{4.0}, 0.9), 4.0);
}

TEST(Dispersion, MadAndCvOfAKnownSample) {
  const std::vector<double> v = {1, 1, 2, 2, 4, 6, 9};  // median 2; |dev| 1 1 0 0 2 4 7
  EXPECT_DOUBLE_EQ(median_absolute_deviation(v), 1.0);
  const Dispersion d = describe_dispersion(v);
  EXPECT_EQ(d.count, 7u);
  EXPECT_DOUBLE_EQ(d.median, 2.0);
  EXPECT_DOUBLE_EQ(d.q1, 1.5);
  EXPECT_DOUBLE_EQ(d.q3, 5.0);
  EXPECT_DOUBLE_EQ(d.iqr(), 3.5);
  // mean 25/7, sample variance sum((x - m)^2) / 6
  const double m = 25.0 / 7;
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  EXPECT_NEAR(d.cv, std::sqrt(ss / 6) / m, 1e-12);
  EXPECT_NEAR(d.robust_cv(), 3.5 / (1.349 * 2.0), 1e-12);
}

TEST(Dispersion, OneOutlierMovesTheCvButNotTheRobustCv) {
  std::vector<double> v(13, 10.0);
  for (size_t i = 0; i < v.size(); ++i) v[i] += 0.1 * double(i % 3);
  const Dispersion steady = describe_dispersion(v);
  v[5] = 90.0;  // one step that waited for the disk
  const Dispersion spiked = describe_dispersion(v);
  EXPECT_GT(spiked.cv, 10 * steady.cv);
  EXPECT_NEAR(spiked.robust_cv(), steady.robust_cv(), 0.01);
  EXPECT_NEAR(spiked.median, steady.median, 0.1);
}

// P(X <= k), X ~ binomial(n, 1/2), by exact integer counting.
double binomial_cdf(size_t n, size_t k) {
  double c = 1, sum = 0;  // C(n, i)
  for (size_t i = 0; i <= k; ++i) {
    sum += c;
    c = c * double(n - i) / double(i + 1);
  }
  return sum / std::pow(2.0, double(n));
}

TEST(Dispersion, MedianIntervalRanksFollowTheBinomialRule) {
  // n = 13: P(X <= 2) = 92/8192 <= 2.5 % < P(X <= 3) = 378/8192, so [x(3), x(11)].
  const RankInterval r13 = median_rank_interval(13);
  EXPECT_EQ(r13.lo, 3u);
  EXPECT_EQ(r13.hi, 11u);
  EXPECT_NEAR(r13.coverage, 1 - 2 * 92.0 / 8192, 1e-12);
  for (size_t n = 6; n < 60; ++n) {
    const RankInterval r = median_rank_interval(n);
    SCOPED_TRACE("n = " + std::to_string(n));
    EXPECT_EQ(r.hi, n + 1 - r.lo);
    EXPECT_LE(binomial_cdf(n, r.lo - 1), 0.025);  // this interval reaches 95 %
    EXPECT_GT(binomial_cdf(n, r.lo), 0.025);      // one rank narrower would not
    EXPECT_GE(r.coverage, 0.95);
  }
  // Too few values for 95 %: the whole range, with its true coverage.
  const RankInterval r5 = median_rank_interval(5);
  EXPECT_EQ(r5.lo, 1u);
  EXPECT_EQ(r5.hi, 5u);
  EXPECT_NEAR(r5.coverage, 1 - 2.0 / 32, 1e-12);
}

TEST(Dispersion, MedianIntervalCoversTheTrueMedianAsOftenAsItSays) {
  std::mt19937 rng(11);
  std::lognormal_distribution<double> steps(0.0, 0.5);  // true median 1
  const size_t n = 25, trials = 4000;
  size_t covered = 0;
  for (size_t t = 0; t < trials; ++t) {
    std::vector<double> v(n);
    for (double& x : v) x = steps(rng);
    const Dispersion d = describe_dispersion(v);
    covered += d.ci_low <= 1.0 && 1.0 <= d.ci_high;
  }
  const double rate = double(covered) / double(trials);
  const double expected = median_rank_interval(n).coverage;
  EXPECT_NEAR(rate, expected, 4 * std::sqrt(expected * (1 - expected) / double(trials)));
}

}  // namespace
}  // namespace hybrid::base
