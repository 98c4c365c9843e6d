#include "bench/compare/wilcoxon.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace hybrid::bench {

namespace {

constexpr int kExactLimit = 50;  // SciPy's bound for the exact distribution

// Average ranks (1-based) of the values; `tied` tells whether any two were equal,
// `tie_term` is sum(t^3 - t) over groups of t equal values (for the variance).
std::vector<double> average_ranks(std::span<const double> values, bool& tied, double& tie_term) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  tied = false;
  tie_term = 0;
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
    const double rank = 0.5 * static_cast<double>(i + j) + 1.0;
    for (std::size_t k = i; k <= j; ++k) ranks[order[k]] = rank;
    const double t = static_cast<double>(j - i + 1);
    if (t > 1) {
      tied = true;
      tie_term += t * t * t - t;
    }
    i = j + 1;
  }
  return ranks;
}

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

}  // namespace

std::vector<double> signed_rank_counts(int n) {
  if (n < 0) throw std::invalid_argument("signed_rank_counts: n must be >= 0");
  const int max_sum = n * (n + 1) / 2;
  std::vector<double> counts(static_cast<std::size_t>(max_sum) + 1, 0.0);
  counts[0] = 1;
  // Rank k is either positive (adds k to W+) or not.
  for (int k = 1; k <= n; ++k) {
    for (int s = max_sum; s >= k; --s) counts[s] += counts[s - k];
  }
  return counts;
}

double wilcoxon_min_p_value(int n) { return n < 1 ? 1.0 : std::min(1.0, 2.0 / std::ldexp(1.0, n)); }

WilcoxonResult wilcoxon_signed_rank(std::span<const double> differences) {
  if (differences.empty()) throw std::invalid_argument("wilcoxon_signed_rank: empty sample");
  std::vector<double> d;
  for (double x : differences) {
    if (std::isnan(x)) throw std::invalid_argument("wilcoxon_signed_rank: NaN difference");
    if (x != 0) d.push_back(x);
  }
  WilcoxonResult r;
  r.n = static_cast<int>(d.size());
  if (d.empty()) return r;  // every pair equal: no evidence either way

  std::vector<double> magnitude(d.size());
  for (std::size_t i = 0; i < d.size(); ++i) magnitude[i] = std::abs(d[i]);
  bool tied = false;
  double tie_term = 0;
  const std::vector<double> ranks = average_ranks(magnitude, tied, tie_term);
  for (std::size_t i = 0; i < d.size(); ++i) (d[i] > 0 ? r.w_plus : r.w_minus) += ranks[i];

  const double n = r.n;
  const double mean = n * (n + 1) / 4;
  if (r.n <= kExactLimit && !tied) {
    r.exact = true;
    const std::vector<double> counts = signed_rank_counts(r.n);
    const double total = std::ldexp(1.0, r.n);
    // The distribution is symmetric: P(W+ <= w) for the smaller of W+ and W-.
    const auto w = static_cast<std::size_t>(std::lround(std::min(r.w_plus, r.w_minus)));
    double tail = 0;
    for (std::size_t s = 0; s <= w; ++s) tail += counts[s];
    r.p_value = std::min(1.0, 2.0 * tail / total);
    return r;
  }
  r.exact = false;
  const double variance = n * (n + 1) * (2 * n + 1) / 24 - tie_term / 48;
  if (variance <= 0) return r;
  const double z = (std::min(r.w_plus, r.w_minus) - mean) / std::sqrt(variance);
  r.p_value = std::min(1.0, 2.0 * normal_cdf(z));
  return r;
}

}  // namespace hybrid::bench
