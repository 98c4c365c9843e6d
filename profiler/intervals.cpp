#include "profiler/intervals.h"

#include <algorithm>

namespace hybrid::profiler {

Intervals merged(Intervals v) {
  std::sort(v.begin(), v.end());
  Intervals out;
  for (auto [s, e] : v) {
    if (e <= s) continue;
    if (!out.empty() && s <= out.back().second)
      out.back().second = std::max(out.back().second, e);
    else
      out.emplace_back(s, e);
  }
  return out;
}

int64_t total_length(const Intervals& u) {
  int64_t t = 0;
  for (auto [s, e] : u) t += e - s;
  return t;
}

int64_t covered(const Intervals& u, int64_t s, int64_t e) {
  auto it = std::upper_bound(u.begin(), u.end(), std::make_pair(s, INT64_MIN));
  if (it != u.begin()) --it;
  int64_t t = 0;
  for (; it != u.end() && it->first < e; ++it) {
    const int64_t a = std::max(s, it->first), b = std::min(e, it->second);
    if (b > a) t += b - a;
  }
  return t;
}

int64_t overlap(const Intervals& a, const Intervals& b) {
  int64_t t = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t s = std::max(a[i].first, b[j].first), e = std::min(a[i].second, b[j].second);
    if (e > s) t += e - s;
    (a[i].second < b[j].second) ? ++i : ++j;
  }
  return t;
}

}  // namespace hybrid::profiler
