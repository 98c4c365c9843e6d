// Small descriptive statistics used by the comparer.
#pragma once

#include <span>

namespace hybrid::bench {

// Median (mean of the two middle values for an even count). Throws on an empty sample.
double median(std::span<const double> values);

// Geometric mean of positive values: the right average for ratios, because a
// 2x slowdown and a 2x speedup cancel. Throws on an empty sample or a value <= 0.
double geometric_mean(std::span<const double> values);

}  // namespace hybrid::bench
