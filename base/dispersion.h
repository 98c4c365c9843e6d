// How spread out a sample of measurements is (step times of a trial, say): the
// quartiles, the median absolute deviation, the coefficient of variation and a
// distribution-free confidence interval of the median. Robust figures (median,
// MAD, IQR) first: a stray slow step must not make a steady sample look noisy.
#pragma once

#include <cstddef>
#include <span>

namespace hybrid::base {

// The p-quantile (0 <= p <= 1) by linear interpolation between order statistics
// (Hyndman and Fan's type 7, R's and NumPy's default); 0 for an empty sample.
double quantile(std::span<const double> values, double p);

// Median absolute deviation from the median (unscaled); 0 for an empty sample.
double median_absolute_deviation(std::span<const double> values);

// The 1-based ranks (lo, hi) of the order statistics that bound a confidence
// interval of the median at level >= `level` (the binomial(n, 1/2) rule: no
// distribution assumed). Below the smallest n that reaches the level, (1, n).
struct RankInterval {
  size_t lo = 0, hi = 0;
  double coverage = 0;  // the interval's exact coverage
};
RankInterval median_rank_interval(size_t n, double level = 0.95);

struct Dispersion {
  size_t count = 0;
  double median = 0;
  double q1 = 0, q3 = 0;           // quartiles (type 7)
  double mad = 0;                  // median absolute deviation, unscaled
  double cv = 0;                   // sample standard deviation over mean (0 when the mean is 0)
  double ci_low = 0, ci_high = 0;  // 95 % confidence interval of the median
  double ci_coverage = 0;

  double iqr() const { return q3 - q1; }
  // IQR / (1.349 median): the CV a normal sample with this IQR would have, but
  // unmoved by outliers while they are under a quarter of the sample (and, unlike
  // the MAD, moved by a second mode of a quarter or more). 0 when the median is 0.
  double robust_cv() const;
};
Dispersion describe_dispersion(std::span<const double> values);

}  // namespace hybrid::base
