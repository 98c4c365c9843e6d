// Two-sided Wilcoxon signed-rank test for paired samples, with SciPy's defaults
// (scipy.stats.wilcoxon: zero_method="wilcox", correction=False, method="auto"):
//   - zero differences are dropped;
//   - the exact null distribution when at most 50 differences remain and none of
//     their absolute values tie;
//   - otherwise the normal approximation with the tie-corrected variance.
// The comparer uses it on per-round log ratios of an A/B run (hybrid-bench ab):
// round r of the baseline and round r of the current build ran back to back, so a
// slow minute of the machine hits both sides of the pair.
#pragma once

#include <span>
#include <vector>

namespace hybrid::bench {

struct WilcoxonResult {
  double w_plus = 0;   // sum of the ranks of the positive differences
  double w_minus = 0;  // sum of the ranks of the negative differences
  int n = 0;           // differences left after dropping zeros
  double p_value = 1;  // two-sided; 1 when nothing is left
  bool exact = true;
};

// Throws std::invalid_argument on an empty sample or a NaN.
WilcoxonResult wilcoxon_signed_rank(std::span<const double> differences);

// Number of sign assignments of the ranks 1..n with W+ = 0..n(n+1)/2 (2^n in all).
std::vector<double> signed_rank_counts(int n);

// Smallest two-sided p-value the exact test can give with n pairs: 2 / 2^n.
double wilcoxon_min_p_value(int n);

}  // namespace hybrid::bench
