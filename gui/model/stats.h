// Small statistics shared by the view-models: a value over ranks (profiler::Spread)
// and the median of a series.
#pragma once

#include <algorithm>
#include <vector>

#include "profiler/spread.h"

namespace hybrid::gui {

using profiler::Spread;

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
