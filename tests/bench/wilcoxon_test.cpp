// The Wilcoxon signed-rank test against brute force (every one of the 2^n sign
// assignments enumerated), SciPy's documented example, and an independent
// tie-corrected normal approximation.
#include "bench/compare/wilcoxon.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <stdexcept>

namespace hybrid::bench {
namespace {

// Exact two-sided p by enumeration: the share of sign flips of the ranks whose W+
// is at least as far from the mean as the observed one (no ties, no zeros).
double brute_force_p(const std::vector<double>& d) {
  const int n = static_cast<int>(d.size());
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return std::abs(d[a]) < std::abs(d[b]); });
  double w_obs = 0;
  for (int r = 0; r < n; ++r) {
    if (d[order[r]] > 0) w_obs += r + 1;
  }
  const double mean = n * (n + 1) / 4.0;
  const double dev = std::abs(w_obs - mean);
  long extreme = 0;
  for (long mask = 0; mask < (1L << n); ++mask) {
    double w = 0;
    for (int r = 0; r < n; ++r) {
      if (mask & (1L << r)) w += r + 1;
    }
    if (std::abs(w - mean) >= dev - 1e-9) ++extreme;
  }
  return std::min(1.0, static_cast<double>(extreme) / static_cast<double>(1L << n));
}

// A fixed pseudo-random sequence (LCG), the same on every platform.
struct Lcg {
  unsigned long long state;
  double next() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / static_cast<double>(1ULL << 53);
  }
};

TEST(Wilcoxon, MatchesEnumerationOfEverySignAssignment) {
  Lcg rng{12345};
  for (int n = 1; n <= 14; ++n) {
    for (int trial = 0; trial < 6; ++trial) {
      std::vector<double> d(n);
      const double shift = 0.3 * trial - 0.6;
      for (double& x : d) x = rng.next() - 0.5 + shift;
      const WilcoxonResult r = wilcoxon_signed_rank(d);
      ASSERT_TRUE(r.exact);
      EXPECT_NEAR(r.p_value, brute_force_p(d), 1e-12) << "n = " << n << ", trial " << trial;
      EXPECT_DOUBLE_EQ(r.w_plus + r.w_minus, n * (n + 1) / 2.0);
    }
  }
}

TEST(Wilcoxon, SciPyDocumentedExample) {
  // scipy.stats.wilcoxon docs: differences in height of paired plants (Fisher);
  // wilcoxon(d) -> statistic 24.0, pvalue 0.041259765625 (exact, two-sided).
  const std::vector<double> d = {6, 8, 14, 16, 23, 24, 28, 29, 41, -48, 49, 56, 60, -67, 75};
  const WilcoxonResult r = wilcoxon_signed_rank(d);
  EXPECT_DOUBLE_EQ(r.w_minus, 24.0);  // ranks 10 (48) and 14 (67)
  EXPECT_DOUBLE_EQ(r.w_plus, 96.0);
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.p_value, 0.041259765625);  // 2 * 676 / 2^15
}

TEST(Wilcoxon, CountsAreTheDistributionOfEverySignAssignment) {
  for (int n = 0; n <= 20; ++n) {
    const std::vector<double> c = signed_rank_counts(n);
    ASSERT_EQ(c.size(), static_cast<std::size_t>(n * (n + 1) / 2 + 1));
    EXPECT_DOUBLE_EQ(std::accumulate(c.begin(), c.end(), 0.0), std::ldexp(1.0, n));
    for (std::size_t s = 0; s < c.size(); ++s) EXPECT_DOUBLE_EQ(c[s], c[c.size() - 1 - s]);
  }
  // n = 4: how many subsets of {1, 2, 3, 4} sum to 0..10 (hand-enumerated).
  EXPECT_EQ(signed_rank_counts(4), (std::vector<double>{1, 1, 1, 2, 2, 2, 2, 2, 1, 1, 1}));
}

TEST(Wilcoxon, AllPairsOneWayGiveTheSmallestP) {
  const std::vector<double> d = {0.3, 0.2, 0.25, 0.4, 0.31, 0.28, 0.22, 0.35, 0.27, 0.33};
  const WilcoxonResult r = wilcoxon_signed_rank(d);
  EXPECT_DOUBLE_EQ(r.p_value, 2.0 / 1024.0);
  EXPECT_DOUBLE_EQ(wilcoxon_min_p_value(10), 2.0 / 1024.0);
  EXPECT_DOUBLE_EQ(wilcoxon_min_p_value(5), 0.0625);  // 5 pairs can never reach 0.05
  EXPECT_DOUBLE_EQ(wilcoxon_min_p_value(1), 1.0);
}

TEST(Wilcoxon, ZerosAreDroppedAndTiesUseTheCorrectedNormalApproximation) {
  // Zero differences carry no sign: dropped, as SciPy's zero_method="wilcox".
  const WilcoxonResult zeros = wilcoxon_signed_rank(std::vector<double>{0, 0, 1, 2, 3, -4});
  EXPECT_EQ(zeros.n, 4);
  EXPECT_NEAR(zeros.p_value, brute_force_p({1, 2, 3, -4}), 1e-12);
  EXPECT_DOUBLE_EQ(wilcoxon_signed_rank(std::vector<double>{0, 0}).p_value, 1.0);

  // |d| = 1,1,2,3,3,3,4: ranks 1.5,1.5,3,5,5,5,7; W+ = 1.5 + 3 + 5 + 5 + 7 = 21.5, W- = 6.5.
  const std::vector<double> d = {1, -1, 2, 3, -3, 3, 4};
  const WilcoxonResult r = wilcoxon_signed_rank(d);
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.w_plus, 21.5);
  EXPECT_DOUBLE_EQ(r.w_minus, 6.5);
  // Variance n(n+1)(2n+1)/24 - sum(t^3 - t)/48 with ties of 2 and 3: 35 - (6 + 24)/48.
  const double sd = std::sqrt(35.0 - 30.0 / 48.0);
  const double z = (6.5 - 14.0) / sd;
  EXPECT_NEAR(r.p_value, std::erfc(-z / std::sqrt(2.0)), 1e-12);  // 2 * Phi(z)
}

TEST(Wilcoxon, BadInputThrows) {
  EXPECT_THROW(wilcoxon_signed_rank(std::vector<double>{}), std::invalid_argument);
  EXPECT_THROW(wilcoxon_signed_rank(std::vector<double>{1, NAN}), std::invalid_argument);
}

}  // namespace
}  // namespace hybrid::bench
