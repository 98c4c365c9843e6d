// Interval unions against a naive reference: a bitmap with one cell per ns.
#include "profiler/intervals.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace hybrid::profiler {
namespace {

constexpr int64_t kSpan = 200;

std::vector<bool> bitmap(const Intervals& v) {
  std::vector<bool> b(kSpan, false);
  for (auto [s, e] : v)
    for (int64_t t = s; t < e; ++t) b[size_t(t)] = true;
  return b;
}

Intervals random_intervals(std::mt19937& rng, int n) {
  std::uniform_int_distribution<int64_t> pos(0, kSpan - 1), len(-3, 30);  // some empty or inverted
  Intervals v;
  for (int i = 0; i < n; ++i) {
    const int64_t s = pos(rng);
    v.emplace_back(s, std::min(kSpan, s + len(rng)));
  }
  return v;
}

TEST(Intervals, MergedIsSortedDisjointAndCoversTheSameTime) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const Intervals v = random_intervals(rng, trial % 12);
    const Intervals u = merged(v);
    for (size_t i = 0; i < u.size(); ++i) {
      EXPECT_LT(u[i].first, u[i].second);
      if (i) {
        EXPECT_LT(u[i - 1].second, u[i].first) << "touching intervals must be joined";
      }
    }
    const auto ref = bitmap(v);
    EXPECT_EQ(bitmap(u), ref);
    int64_t cells = 0;
    for (bool b : ref) cells += b;
    EXPECT_EQ(total_length(u), cells);
  }
}

TEST(Intervals, CoveredAndOverlapMatchTheBitmap) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int64_t> pos(0, kSpan);
  for (int trial = 0; trial < 200; ++trial) {
    const Intervals a = merged(random_intervals(rng, 6)), b = merged(random_intervals(rng, 6));
    const auto ba = bitmap(a), bb = bitmap(b);
    int64_t both = 0;
    for (size_t t = 0; t < size_t(kSpan); ++t) both += ba[t] && bb[t];
    EXPECT_EQ(overlap(a, b), both);
    EXPECT_EQ(overlap(b, a), both);
    int64_t s = pos(rng), e = pos(rng);
    if (s > e) std::swap(s, e);
    int64_t in = 0;
    for (int64_t t = s; t < e; ++t) in += ba[size_t(t)];
    EXPECT_EQ(covered(a, s, e), in) << "[" << s << ", " << e << ")";
  }
}

}  // namespace
}  // namespace hybrid::profiler
