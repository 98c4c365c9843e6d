// A quantity measured on each rank: the mean is what reports and tables show and
// sort by; min and max show how unbalanced the ranks are.
#pragma once

#include <algorithm>
#include <span>

namespace hybrid::profiler {

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

}  // namespace hybrid::profiler
