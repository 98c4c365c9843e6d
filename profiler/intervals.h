// Time as unions of half-open intervals [start, end) in ns: how communication,
// waits and scopes overlap (the comm tracer's exposed time, the viewer's step
// accounting).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace hybrid::profiler {

using Intervals = std::vector<std::pair<int64_t, int64_t>>;

// Sorted, disjoint union (empty intervals dropped).
Intervals merged(Intervals v);

// Total length of a sorted, disjoint union.
int64_t total_length(const Intervals& u);

// Length of [s, e) covered by a sorted, disjoint union.
int64_t covered(const Intervals& u, int64_t s, int64_t e);

// Length of the intersection of two sorted, disjoint unions.
int64_t overlap(const Intervals& a, const Intervals& b);

}  // namespace hybrid::profiler
