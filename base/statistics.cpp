#include "base/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace hybrid::base {

double median(std::span<const double> values) {
  if (values.empty()) return 0.0;
  std::vector<double> v(values.begin(), values.end());
  const auto nan_last = [](double a, double b) { return std::isnan(b) ? !std::isnan(a) : a < b; };
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(mid), v.end(), nan_last);
  const double upper = v[mid];
  if (v.size() % 2) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + std::ptrdiff_t(mid), nan_last);
  return 0.5 * (lower + upper);
}

double mean(std::span<const double> values) {
  if (values.empty()) return 0.0;
  return std::accumulate(values.begin(), values.end(), 0.0) / double(values.size());
}

}  // namespace hybrid::base
