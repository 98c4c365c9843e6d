#include "bench/compare/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace hybrid::bench {

double geometric_mean(std::span<const double> values) {
  if (values.empty()) throw std::invalid_argument("geometric mean of an empty sample");
  double log_sum = 0;
  for (double v : values) {
    if (!(v > 0)) throw std::invalid_argument("geometric mean needs positive values");
    log_sum += std::log(v);
  }
  return std::exp(log_sum / static_cast<double>(values.size()));
}

std::vector<double> holm_adjusted(std::span<const double> p_values) {
  const std::size_t m = p_values.size();
  std::vector<std::size_t> order(m);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return p_values[a] < p_values[b]; });
  std::vector<double> adjusted(m);
  double running = 0;
  for (std::size_t rank = 0; rank < m; ++rank) {
    const std::size_t i = order[rank];
    running = std::max(running, std::min(1.0, static_cast<double>(m - rank) * p_values[i]));
    adjusted[i] = running;
  }
  return adjusted;
}

}  // namespace hybrid::bench
