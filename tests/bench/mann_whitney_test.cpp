// Mann–Whitney U test against values computed independently of the implementation:
// hand-enumerated small cases, the worked example of SciPy's documentation, brute-force
// enumeration of every relabelling, and the tie-corrected variance computed from the
// midranks directly (the finite-population variance of a rank sum).
#include "bench/compare/mann_whitney.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

namespace hybrid::bench {
namespace {

constexpr double kTight = 1e-12;  // exact rational results computed in double

// --- exact distribution ---------------------------------------------------------

TEST(MannWhitney, CompletelySeparatedThreeVersusThree) {
  // Only 1 of the C(6,3) = 20 rank sets has U = 0 (and 1 has U = 9): p = 2/20.
  std::vector<double> x = {1, 2, 3}, y = {4, 5, 6};
  auto r = mann_whitney_u(x, y);
  EXPECT_EQ(r.method, MannWhitneyMethod::Exact);
  EXPECT_DOUBLE_EQ(r.u1, 0.0);
  EXPECT_NEAR(r.p_value, 0.1, kTight);
}

TEST(MannWhitney, CompletelySeparatedTwoVersusThree) {
  // C(5,2) = 10 rank sets, one with U = 6: p = 2/10.
  std::vector<double> x = {10, 11}, y = {1, 2, 3};
  auto r = mann_whitney_u(x, y);
  EXPECT_DOUBLE_EQ(r.u1, 6.0);
  EXPECT_NEAR(r.p_value, 0.2, kTight);
}

TEST(MannWhitney, InterleavedThreeVersusThreeByHand) {
  // x = {1,3,5} beats y = {2,4,6} in 3 pairs: U1 = 3, U2 = 6. Counts of U over the
  // 20 rank sets for n = 3, 3 (listed by hand): 1 1 2 3 3 3 3 2 1 1 for U = 0..9.
  // P(U >= 6) = (3 + 2 + 1 + 1) / 20, doubled: 0.7.
  std::vector<double> x = {1, 3, 5}, y = {2, 4, 6};
  auto r = mann_whitney_u(x, y);
  EXPECT_DOUBLE_EQ(r.u1, 3.0);
  EXPECT_NEAR(r.p_value, 0.7, kTight);
  EXPECT_EQ(mann_whitney_u_counts(3, 3), (std::vector<double>{1, 1, 2, 3, 3, 3, 3, 2, 1, 1}));
}

TEST(MannWhitney, ScipyDocumentationExample) {
  // scipy.stats.mannwhitneyu documentation (diagnosis ages, after Shier 2004):
  // U1 = 17, exact two-sided p = 0.1111111111111111, asymptotic 0.11134688653314041.
  std::vector<double> males = {19, 22, 16, 29, 24}, females = {20, 11, 17, 12};
  auto exact = mann_whitney_u(males, females);
  EXPECT_EQ(exact.method, MannWhitneyMethod::Exact);
  EXPECT_DOUBLE_EQ(exact.u1, 17.0);
  EXPECT_NEAR(exact.p_value, 1.0 / 9.0, kTight);
  auto asymptotic = mann_whitney_u(males, females, MannWhitneyMethod::Asymptotic);
  EXPECT_NEAR(asymptotic.p_value, 0.11134688653314041, 1e-12);
}

// Counts of U = sum of x's ranks - n1(n1+1)/2 over every n1-subset of ranks 1..N.
std::vector<double> brute_force_counts(int n1, int n2) {
  const int n = n1 + n2;
  std::vector<double> counts(static_cast<std::size_t>(n1 * n2) + 1, 0.0);
  for (unsigned mask = 0; mask < (1u << n); ++mask) {
    if (__builtin_popcount(mask) != n1) continue;
    int rank_sum = 0;
    for (int i = 0; i < n; ++i) {
      if (mask & (1u << i)) rank_sum += i + 1;
    }
    counts[static_cast<std::size_t>(rank_sum - n1 * (n1 + 1) / 2)] += 1;
  }
  return counts;
}

TEST(MannWhitney, NullDistributionMatchesEnumeration) {
  for (int n1 = 1; n1 <= 7; ++n1) {
    for (int n2 = 1; n2 <= 8; ++n2) {
      SCOPED_TRACE(::testing::Message() << "n1=" << n1 << " n2=" << n2);
      EXPECT_EQ(mann_whitney_u_counts(n1, n2), brute_force_counts(n1, n2));
    }
  }
}

// Two-sided permutation p-value by relabelling the pooled data every possible way.
double brute_force_p(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<double> pooled(x);
  pooled.insert(pooled.end(), y.begin(), y.end());
  const int n = static_cast<int>(pooled.size()), n1 = static_cast<int>(x.size());
  auto u_of = [&](unsigned mask) {
    double u = 0;
    for (int i = 0; i < n; ++i) {
      if (!(mask & (1u << i))) continue;
      for (int j = 0; j < n; ++j) {
        if (!(mask & (1u << j)))
          u += pooled[i] > pooled[j] ? 1 : (pooled[i] == pooled[j] ? 0.5 : 0);
      }
    }
    return u;
  };
  const double observed = u_of((1u << n1) - 1);  // x is the first n1 of pooled
  double le = 0, ge = 0, total = 0;
  for (unsigned mask = 0; mask < (1u << n); ++mask) {
    if (__builtin_popcount(mask) != n1) continue;
    double u = u_of(mask);
    total += 1;
    le += u <= observed;
    ge += u >= observed;
  }
  return std::min(1.0, 2.0 * std::min(le, ge) / total);
}

TEST(MannWhitney, ExactPValueMatchesPermutationEnumeration) {
  std::mt19937 rng(20240601);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (int trial = 0; trial < 40; ++trial) {
    const int n1 = 2 + trial % 6, n2 = 3 + (trial / 6) % 6;
    std::vector<double> x(n1), y(n2);
    const double shift = 0.15 * (trial % 5);  // from no difference to a clear one
    for (auto& v : x) v = uniform(rng) + shift;
    for (auto& v : y) v = uniform(rng);
    auto r = mann_whitney_u(x, y);
    ASSERT_EQ(r.method, MannWhitneyMethod::Exact);
    EXPECT_NEAR(r.p_value, brute_force_p(x, y), kTight) << "trial " << trial;
  }
}

// --- normal approximation -----------------------------------------------------------

// Independent route to the tie-corrected variance: U differs from x's rank sum by a
// constant, and a rank sum drawn without replacement from the N midranks has variance
// n1 n2 / (N (N - 1)) * sum (r_i - mean r)^2.
double independent_asymptotic_p(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<double> pooled(x);
  pooled.insert(pooled.end(), y.begin(), y.end());
  const double n = static_cast<double>(pooled.size());
  const double n1 = static_cast<double>(x.size()), n2 = static_cast<double>(y.size());
  auto midrank = [&](double v) {
    double below = 0, equal = 0;
    for (double p : pooled) {
      below += p < v;
      equal += p == v;
    }
    return below + (equal + 1) / 2;
  };
  double rank_sum_x = 0, ss = 0;
  for (double v : x) rank_sum_x += midrank(v);
  for (double v : pooled) ss += std::pow(midrank(v) - (n + 1) / 2, 2);
  const double variance = n1 * n2 / (n * (n - 1)) * ss;
  const double u1 = rank_sum_x - n1 * (n1 + 1) / 2;
  const double u = std::max(u1, n1 * n2 - u1);
  const double z = (u - n1 * n2 / 2 - 0.5) / std::sqrt(variance);
  return std::min(1.0, std::erfc(z / std::sqrt(2.0)));
}

TEST(MannWhitney, LargeSeparatedSamplesUseNormalApproximation) {
  // 1..10 against 11..20: U = 0, mu = 50, sigma = sqrt(10*10*21/12); with the
  // continuity correction p = erfc(49.5 / sigma / sqrt 2) = 1.826717911095504e-4
  // (computed with Python's math.erfc).
  std::vector<double> x(10), y(10);
  std::iota(x.begin(), x.end(), 1.0);
  std::iota(y.begin(), y.end(), 11.0);
  auto r = mann_whitney_u(x, y);
  EXPECT_EQ(r.method, MannWhitneyMethod::Asymptotic);
  EXPECT_DOUBLE_EQ(r.u1, 0.0);
  EXPECT_NEAR(r.p_value, 1.826717911095504e-4, 1e-15);
}

TEST(MannWhitney, TiesUseTieCorrectedNormalApproximation) {
  // Ties at 2 (x3), 3 (x3), 5 (x2), 8 (x2): sum t^3 - t = 60, U1 = 27.
  // Tie-corrected p = 0.08777177748122655 (Python, math.erfc).
  std::vector<double> x = {1, 2, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<double> y = {2, 3, 3, 5, 8, 10, 11, 12, 13, 14};
  auto r = mann_whitney_u(x, y);
  EXPECT_EQ(r.method, MannWhitneyMethod::Asymptotic);
  EXPECT_DOUBLE_EQ(r.u1, 27.0);
  EXPECT_NEAR(r.p_value, 0.08777177748122655, 1e-12);
  EXPECT_NEAR(r.p_value, independent_asymptotic_p(x, y), 1e-12);
}

TEST(MannWhitney, SmallSampleWithTiesIsNotExact) {
  // SciPy uses the exact distribution only without ties.
  std::vector<double> x = {1, 2, 2}, y = {2, 3, 4, 5};
  auto r = mann_whitney_u(x, y);
  EXPECT_EQ(r.method, MannWhitneyMethod::Asymptotic);
  EXPECT_NEAR(r.p_value, independent_asymptotic_p(x, y), 1e-12);
}

TEST(MannWhitney, AsymptoticMatchesIndependentVarianceOnRandomTiedData) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> coarse(0, 6);  // many ties
  for (int trial = 0; trial < 30; ++trial) {
    std::vector<double> x(9 + trial % 5), y(10 + trial % 7);
    for (auto& v : x) v = coarse(rng) + (trial % 3);
    for (auto& v : y) v = coarse(rng);
    auto r = mann_whitney_u(x, y);
    EXPECT_NEAR(r.p_value, independent_asymptotic_p(x, y), 1e-12) << "trial " << trial;
  }
}

TEST(MannWhitney, AllValuesTiedGivePOne) {
  std::vector<double> x(10, 3.0), y(12, 3.0);
  auto r = mann_whitney_u(x, y);
  EXPECT_DOUBLE_EQ(r.p_value, 1.0);
  EXPECT_DOUBLE_EQ(r.u1, 60.0);  // every pair a tie: 120 pairs x 1/2
}

TEST(MannWhitney, MethodChoiceFollowsScipy) {
  std::vector<double> nine(9), eight(8), twenty(20);
  std::iota(nine.begin(), nine.end(), 0.5);
  std::iota(eight.begin(), eight.end(), 100.0);
  std::iota(twenty.begin(), twenty.end(), 200.0);
  EXPECT_EQ(mann_whitney_u(nine, twenty).method, MannWhitneyMethod::Asymptotic);
  EXPECT_EQ(mann_whitney_u(eight, twenty).method, MannWhitneyMethod::Exact);
  EXPECT_EQ(mann_whitney_u(twenty, eight).method, MannWhitneyMethod::Exact);
}

TEST(MannWhitney, SymmetricInItsArguments) {
  std::vector<double> x = {3.1, 4.7, 2.2, 9.0, 5.5, 6.1}, y = {1.0, 2.5, 3.3, 0.7, 4.0};
  auto xy = mann_whitney_u(x, y), yx = mann_whitney_u(y, x);
  EXPECT_DOUBLE_EQ(xy.u1 + yx.u1, 30.0);
  EXPECT_NEAR(xy.p_value, yx.p_value, kTight);
}

TEST(MannWhitney, SmallestReachablePValue) {
  EXPECT_NEAR(mann_whitney_min_p_value(3, 3), 0.1, kTight);         // 2 / C(6,3)
  EXPECT_NEAR(mann_whitney_min_p_value(4, 4), 2.0 / 70.0, kTight);  // 2 / C(8,4)
  EXPECT_NEAR(mann_whitney_min_p_value(2, 2), 2.0 / 6.0, kTight);
}

TEST(MannWhitney, EmptySampleIsAnError) {
  std::vector<double> x = {1.0}, empty;
  EXPECT_THROW(mann_whitney_u(x, empty), std::invalid_argument);
  EXPECT_THROW(mann_whitney_u(empty, x), std::invalid_argument);
}

}  // namespace
}  // namespace hybrid::bench
