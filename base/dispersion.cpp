#include "base/dispersion.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/statistics.h"

namespace hybrid::base {

namespace {

std::vector<double> sorted(std::span<const double> values) {
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  return v;
}

double quantile_of_sorted(const std::vector<double>& v, double p) {
  if (v.empty()) return 0.0;
  const double h = std::clamp(p, 0.0, 1.0) * double(v.size() - 1);
  const size_t lo = size_t(std::floor(h));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (h - double(lo)) * (v[hi] - v[lo]);
}

// P(X <= k) for X ~ binomial(n, 1/2), summed in log space (n may be large).
double binomial_half_cdf(size_t n, size_t k) {
  double sum = 0;
  for (size_t i = 0; i <= k && i <= n; ++i)
    sum += std::exp(std::lgamma(double(n) + 1) - std::lgamma(double(i) + 1) -
                    std::lgamma(double(n - i) + 1) - double(n) * std::log(2.0));
  return sum;
}

}  // namespace

double quantile(std::span<const double> values, double p) {
  return quantile_of_sorted(sorted(values), p);
}

double median_absolute_deviation(std::span<const double> values) {
  const double m = median(values);
  std::vector<double> dev;
  dev.reserve(values.size());
  for (double x : values) dev.push_back(std::fabs(x - m));
  return median(dev);
}

RankInterval median_rank_interval(size_t n, double level) {
  RankInterval r{1, n, 1.0};
  if (n == 0) return {0, 0, 0.0};
  // The widest k with P(X < k) <= (1 - level) / 2 gives [x(k), x(n + 1 - k)].
  const double tail = (1.0 - level) / 2;
  for (size_t k = 1; 2 * k <= n + 1; ++k) {
    const double below = k == 1 ? 0.0 : binomial_half_cdf(n, k - 1);
    if (below > tail) break;
    r = {k, n + 1 - k, 1.0 - 2 * below};
  }
  if (r.lo == 1) r.coverage = 1.0 - 2 * std::pow(0.5, double(n));
  return r;
}

double Dispersion::robust_cv() const { return median != 0 ? iqr() / (1.349 * median) : 0.0; }

Dispersion describe_dispersion(std::span<const double> values) {
  Dispersion d;
  const std::vector<double> v = sorted(values);
  d.count = v.size();
  if (v.empty()) return d;
  d.median = median(v);
  d.q1 = quantile_of_sorted(v, 0.25);
  d.q3 = quantile_of_sorted(v, 0.75);
  d.mad = median_absolute_deviation(v);
  const double m = mean(v);
  if (v.size() > 1 && m != 0) {
    double ss = 0;
    for (double x : v) ss += (x - m) * (x - m);
    d.cv = std::sqrt(ss / double(v.size() - 1)) / m;
  }
  const RankInterval r = median_rank_interval(v.size());
  d.ci_low = v[r.lo - 1];
  d.ci_high = v[r.hi - 1];
  d.ci_coverage = r.coverage;
  return d;
}

}  // namespace hybrid::base
