// Geometric mean and Holm adjustment against values worked out by hand (the
// median is base::median, tested in tests/base).
#include "bench/compare/statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace hybrid::bench {
namespace {

TEST(Statistics, GeometricMeanCancelsOppositeRatios) {
  EXPECT_NEAR(geometric_mean(std::vector<double>{2.0, 0.5}), 1.0, 1e-15);
  EXPECT_NEAR(geometric_mean(std::vector<double>{1.0, 4.0, 16.0}), 4.0, 1e-13);
  EXPECT_NEAR(geometric_mean(std::vector<double>{1.3}), 1.3, 1e-15);
}

TEST(Statistics, HolmAdjustmentByHand) {
  // Sorted: 0.005 x4 = 0.02; 0.01 x3 = 0.03; 0.03 x2 = 0.06; 0.04 x1 = 0.04 -> monotone 0.06.
  std::vector<double> p = {0.01, 0.04, 0.03, 0.005};
  std::vector<double> adjusted = holm_adjusted(p);
  ASSERT_EQ(adjusted.size(), 4u);
  EXPECT_NEAR(adjusted[0], 0.03, 1e-15);
  EXPECT_NEAR(adjusted[1], 0.06, 1e-15);
  EXPECT_NEAR(adjusted[2], 0.06, 1e-15);
  EXPECT_NEAR(adjusted[3], 0.02, 1e-15);
  EXPECT_DOUBLE_EQ(holm_adjusted(std::vector<double>{0.6, 0.7})[0], 1.0);  // capped
  EXPECT_DOUBLE_EQ(holm_adjusted(std::vector<double>{0.02})[0], 0.02);     // one test: unchanged
  EXPECT_TRUE(holm_adjusted(std::vector<double>{}).empty());
}

TEST(Statistics, InvalidInputsAreErrors) {
  EXPECT_THROW(geometric_mean(std::vector<double>{}), std::invalid_argument);
  EXPECT_THROW(geometric_mean(std::vector<double>{1.0, 0.0}), std::invalid_argument);
  EXPECT_THROW(geometric_mean(std::vector<double>{1.0, -2.0}), std::invalid_argument);
}

}  // namespace
}  // namespace hybrid::bench
