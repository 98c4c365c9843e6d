// The one median against a naive reference (sort, take the middle or the mean
// of the two middles) on random samples, and its edge cases.
#include "base/statistics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace hybrid::base {
namespace {

double naive_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

TEST(Statistics, MedianMatchesSortAndTakeTheMiddle) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> d(-100, 100);
  for (size_t n = 1; n < 40; ++n) {
    std::vector<double> v(n);
    for (double& x : v) x = std::round(d(rng));  // ties included
    EXPECT_DOUBLE_EQ(median(v), naive_median(v)) << "n = " << n;
  }
}

TEST(Statistics, MedianEdgeCases) {
  EXPECT_EQ(median(std::vector<double>{}), 0.0);
  EXPECT_EQ(median(std::vector<double>{7}), 7.0);
  EXPECT_EQ(median(std::vector<double>{1, 2}), 1.5);  // the true median, not the upper middle
  EXPECT_EQ(median(std::vector<double>{5, 1, 3, 100}), 4.0);
  // NaNs sort last: one NaN among five values moves the median up by one place.
  EXPECT_EQ(median(std::vector<double>{1, 2, NAN, 3, 4}), 3.0);
}

TEST(Statistics, Mean) {
  EXPECT_EQ(mean(std::vector<double>{}), 0.0);
  EXPECT_DOUBLE_EQ(mean(std::vector<double>{1, 2, 3, 10}), 4.0);
}

}  // namespace
}  // namespace hybrid::base
