// Small descriptive statistics used by the comparer; the median is base::median
// (base/statistics.h), the project's one.
#pragma once

#include <span>
#include <vector>

namespace hybrid::bench {

// Geometric mean of positive values: the right average for ratios, because a
// 2x slowdown and a 2x speedup cancel. Throws on an empty sample or a value <= 0.
double geometric_mean(std::span<const double> values);

// Holm–Bonferroni adjusted p-values, in the input order: with m tests, the i-th
// smallest p is multiplied by (m - i + 1), then made monotone and capped at 1. Rejecting
// where the adjusted p < alpha keeps the chance of any false alarm among all m below alpha.
std::vector<double> holm_adjusted(std::span<const double> p_values);

}  // namespace hybrid::bench
