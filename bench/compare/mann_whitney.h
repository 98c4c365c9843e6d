// Two-sided Mann–Whitney U test, with SciPy's choice of method (scipy.stats.mannwhitneyu,
// method="auto", the call Google Benchmark's tools/compare.py makes):
//   - exact null distribution when either sample has at most 8 values and there are no ties;
//   - otherwise the normal approximation with tie correction and continuity correction.
// Non-parametric because benchmark times are skewed (a slow outlier is common, a
// fast one is not), so a t-test's normality assumption does not hold.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace hybrid::bench {

enum class MannWhitneyMethod { Exact, Asymptotic };

struct MannWhitneyResult {
  double u1 = 0;       // U statistic of the first sample (number of pairs x > y, ties count 1/2)
  double p_value = 1;  // two-sided
  MannWhitneyMethod method = MannWhitneyMethod::Exact;
};

// Chooses the method as SciPy does. Throws std::invalid_argument on an empty sample.
MannWhitneyResult mann_whitney_u(std::span<const double> x, std::span<const double> y);

// Forces a method (SciPy's method="exact" / "asymptotic"). The exact method ignores ties.
MannWhitneyResult mann_whitney_u(std::span<const double> x, std::span<const double> y,
                                 MannWhitneyMethod method);

// Number of ways each U = 0..n1*n2 arises among the C(n1+n2, n1) equally likely
// rank assignments without ties: the coefficients of the Gaussian binomial [n1+n2, n1]_q.
std::vector<double> mann_whitney_u_counts(int n1, int n2);

// Smallest two-sided p-value the test can give for these sample sizes (all of x
// above all of y, no ties). If it is not below alpha, no difference can ever be
// significant: too few repetitions.
double mann_whitney_min_p_value(int n1, int n2);

}  // namespace hybrid::bench
