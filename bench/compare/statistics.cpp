#include "bench/compare/statistics.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace hybrid::bench {

double median(std::span<const double> values) {
  if (values.empty()) throw std::invalid_argument("median of an empty sample");
  std::vector<double> v(values.begin(), values.end());
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return 0.5 * (lower + upper);
}

double geometric_mean(std::span<const double> values) {
  if (values.empty()) throw std::invalid_argument("geometric mean of an empty sample");
  double log_sum = 0;
  for (double v : values) {
    if (!(v > 0)) throw std::invalid_argument("geometric mean needs positive values");
    log_sum += std::log(v);
  }
  return std::exp(log_sum / static_cast<double>(values.size()));
}

}  // namespace hybrid::bench
