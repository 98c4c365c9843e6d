// Small statistics shared by the view-models: a value over ranks (mean with its
// spread) and the median of a series.
#pragma once

#include <algorithm>
#include <span>
#include <vector>

namespace hybrid::gui {

// A quantity measured on each rank: the mean is what tables show and sort by,
// min and max show how unbalanced the ranks are.
struct Spread {
  double mean = 0;
  double min = 0;
  double max = 0;

  static Spread of(std::span<const double> values) {
    if (values.empty()) return {};
    Spread s{0, values[0], values[0]};
    for (double v : values) {
      s.mean += v;
      s.min = std::min(s.min, v);
      s.max = std::max(s.max, v);
    }
    s.mean /= double(values.size());
    return s;
  }
  friend bool operator==(const Spread&, const Spread&) = default;
};

// Median of the values (mean of the middle two for an even count); 0 when empty.
inline double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + long(mid), values.end());
  const double hi = values[mid];
  if (values.size() % 2) return hi;
  const double lo = *std::max_element(values.begin(), values.begin() + long(mid));
  return (lo + hi) / 2;
}

}  // namespace hybrid::gui
