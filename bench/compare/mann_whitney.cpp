#include "bench/compare/mann_whitney.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace hybrid::bench {

namespace {

struct Ranking {
  double rank_sum_x = 0;  // sum of the (mid)ranks of x in the pooled sample
  double tie_term = 0;    // sum over tie groups of t^3 - t
  bool ties = false;
};

Ranking rank(std::span<const double> x, std::span<const double> y) {
  struct Item {
    double value;
    bool from_x;
  };
  std::vector<Item> pooled;
  pooled.reserve(x.size() + y.size());
  for (double v : x) pooled.push_back({v, true});
  for (double v : y) pooled.push_back({v, false});
  std::sort(pooled.begin(), pooled.end(),
            [](const Item& a, const Item& b) { return a.value < b.value; });

  Ranking r;
  for (std::size_t i = 0; i < pooled.size();) {
    std::size_t j = i;
    while (j < pooled.size() && pooled[j].value == pooled[i].value) ++j;
    // Positions i..j-1 (ranks i+1..j) share the average rank.
    double mid_rank = 0.5 * static_cast<double>(i + 1 + j);
    double t = static_cast<double>(j - i);
    if (t > 1) {
      r.ties = true;
      r.tie_term += t * t * t - t;
    }
    for (std::size_t k = i; k < j; ++k) {
      if (pooled[k].from_x) r.rank_sum_x += mid_rank;
    }
    i = j;
  }
  return r;
}

void check_sizes(std::span<const double> x, std::span<const double> y) {
  if (x.empty() || y.empty()) {
    throw std::invalid_argument("mann_whitney_u: both samples need at least one value");
  }
}

// Upper-tail standard normal probability.
double normal_sf(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

}  // namespace

std::vector<double> mann_whitney_u_counts(int n1, int n2) {
  if (n1 < 0 || n2 < 0) throw std::invalid_argument("mann_whitney_u_counts: negative size");
  // [n1+n2, n1]_q = prod_{j=1..n1} (1 - q^(n2+j)) / (1 - q^j); after step j the
  // polynomial is [n2+j, j]_q, of degree j*n2, with non-negative integer coefficients.
  const std::size_t degree = static_cast<std::size_t>(n1) * static_cast<std::size_t>(n2);
  std::vector<double> poly(degree + static_cast<std::size_t>(n1) + 1, 0.0);  // room for j*n2 + j
  poly[0] = 1.0;
  for (int j = 1; j <= n1; ++j) {
    const std::size_t shift = static_cast<std::size_t>(n2 + j);
    const std::size_t top = static_cast<std::size_t>(j) * static_cast<std::size_t>(n2) + j;
    // Multiply by (1 - q^shift), highest degree first so each term reads the old value.
    for (std::size_t k = top; k >= shift; --k) poly[k] -= poly[k - shift];
    // Divide by (1 - q^j): a running sum with stride j.
    for (std::size_t k = static_cast<std::size_t>(j); k <= top; ++k) poly[k] += poly[k - j];
  }
  poly.resize(degree + 1);
  return poly;
}

MannWhitneyResult mann_whitney_u(std::span<const double> x, std::span<const double> y,
                                 MannWhitneyMethod method) {
  check_sizes(x, y);
  const double n1 = static_cast<double>(x.size());
  const double n2 = static_cast<double>(y.size());
  const Ranking r = rank(x, y);

  MannWhitneyResult result;
  result.method = method;
  result.u1 = r.rank_sum_x - n1 * (n1 + 1) / 2;
  const double u2 = n1 * n2 - result.u1;
  const double u = std::max(result.u1, u2);  // the larger U: the upper tail, doubled

  if (method == MannWhitneyMethod::Exact) {
    const std::vector<double> counts =
        mann_whitney_u_counts(static_cast<int>(x.size()), static_cast<int>(y.size()));
    const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
    double upper = 0;  // P(U >= u); with ties u may be a half-integer
    for (std::size_t k = static_cast<std::size_t>(std::ceil(u)); k < counts.size(); ++k) {
      upper += counts[k];
    }
    result.p_value = std::min(1.0, 2.0 * upper / total);
    return result;
  }

  const double n = n1 + n2;
  const double mu = n1 * n2 / 2;
  const double variance = n1 * n2 / 12 * ((n + 1) - r.tie_term / (n * (n - 1)));
  if (variance <= 0) {  // every value tied: no evidence of any difference
    result.p_value = 1.0;
    return result;
  }
  const double z = (u - mu - 0.5) / std::sqrt(variance);
  result.p_value = std::clamp(2.0 * normal_sf(z), 0.0, 1.0);
  return result;
}

MannWhitneyResult mann_whitney_u(std::span<const double> x, std::span<const double> y) {
  check_sizes(x, y);
  bool ties = false;
  {
    std::vector<double> pooled(x.begin(), x.end());
    pooled.insert(pooled.end(), y.begin(), y.end());
    std::sort(pooled.begin(), pooled.end());
    ties = std::adjacent_find(pooled.begin(), pooled.end()) != pooled.end();
  }
  const bool small = x.size() <= 8 || y.size() <= 8;
  return mann_whitney_u(x, y,
                        small && !ties ? MannWhitneyMethod::Exact : MannWhitneyMethod::Asymptotic);
}

double mann_whitney_min_p_value(int n1, int n2) {
  if (n1 < 1 || n2 < 1) return 1.0;
  std::vector<double> x(static_cast<std::size_t>(n1)), y(static_cast<std::size_t>(n2));
  std::iota(y.begin(), y.end(), 0.0);
  std::iota(x.begin(), x.end(), static_cast<double>(n2));
  return mann_whitney_u(x, y).p_value;
}

}  // namespace hybrid::bench
