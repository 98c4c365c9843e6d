// Comparing two Google Benchmark runs: pairing by name, medians, the Mann–Whitney
// U test over repetitions, optional normalisation by a calibration benchmark, and
// one verdict per benchmark.
//
// A benchmark is a REGRESSION only when the change is both statistically
// significant (p < alpha) and larger than the threshold in the slower direction;
// IMPROVEMENT is the mirror image. Significance alone is not enough (with many
// repetitions a 0.5 % drift is "significant" but nobody should be paged for it),
// and size alone is not enough (one noisy run can move a median by 30 %).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/compare/benchmark_file.h"
#include "bench/compare/mann_whitney.h"
#include "bench/compare/wilcoxon.h"

namespace hybrid::bench {

enum class Verdict { Regression, Improvement, NoChange, NotSignificant };

// "REGRESSION", "IMPROVEMENT", "no change", "not significant".
std::string_view verdict_name(Verdict verdict);

// Correction for testing many benchmarks at once: with 6 benchmarks at alpha 0.05,
// unchanged code is flagged far more often than 5 % of the time.
enum class Correction { None, Holm };

// "none" | "holm"; throws std::invalid_argument naming --correction otherwise.
Correction parse_correction(std::string_view text);
std::string_view correction_name(Correction correction);

// Which test compares the samples (the independent unit is the round: one process).
//   unpaired (default): per-round medians of each run, Mann-Whitney U;
//   paired:      rounds present in both runs, round r against round r (hybrid-bench ab,
//                or merged alternated rounds): Wilcoxon signed-rank on the per-round
//                log ratios, change = median of the per-round ratios. Measured on a
//                shared runner it missed a 30 % slowdown that the unpaired test caught:
//                one wild process makes one pair's ratio large and wrong, and with 10
//                pairs a single such rank costs the test its significance.
// A file without round tags (raw Google Benchmark output) counts each repetition as a
// round, which is overconfident when they came from one process.
enum class TestKind { Paired, Unpaired };

// "paired" | "unpaired"; throws std::invalid_argument naming --test otherwise.
TestKind parse_test_kind(std::string_view text);
std::string_view test_kind_name(TestKind kind);

struct CompareOptions {
  // The defaults are the ones measured safe on a shared 2-vCPU runner (docs/bench.md,
  // docs/reliability.md): 10 %, Holm over the compared benchmarks.
  double threshold = 0.10;           // relative change of the median that matters (0.10 = 10 %)
  double alpha = 0.05;               // significance level of the two-sided test
  Metric metric = Metric::RealTime;  // the CLI's "auto" picks the suite's (default_metric)
  Correction correction = Correction::Holm;  // Holm: alpha holds for the whole family
  TestKind test = TestKind::Unpaired;
  bool normalize = false;           // divide each run's times by its calibration median...
  bool normalize_always = false;    // ...even when the calibration did not change significantly
  double calibration_alpha = 0.01;  // significance the calibration change needs to be divided out
  std::string calibration_prefix = "calibration/";
};

// "5%" -> 0.05; "0.05" -> 0.05. Throws std::invalid_argument naming the text otherwise.
double parse_threshold(std::string_view text);

// Checks alpha in (0, 1) and threshold >= 0; throws std::invalid_argument naming the option.
void validate(const CompareOptions& options);

struct BenchmarkComparison {
  std::string name;
  std::size_t baseline_repetitions = 0;  // independent samples: rounds (see TestKind)
  std::size_t current_repetitions = 0;
  bool paired = false;  // Wilcoxon signed-rank over `pairs` rounds; else Mann-Whitney U
  std::size_t pairs = 0;
  double baseline_median_ns = 0;  // raw medians, in nanoseconds
  double current_median_ns = 0;
  double raw_change = 0;  // current / baseline - 1 of the raw medians
  double change = 0;      // what the verdict uses (normalised under --normalize; paired: median
                          // of the per-round ratios)
  double p_value = 1;
  double p_adjusted = 1;  // after the correction (== p_value without one); the verdict uses it
  MannWhitneyMethod method = MannWhitneyMethod::Exact;
  bool significance_reachable = true;  // false: too few repetitions for p < alpha
  Verdict verdict = Verdict::NoChange;
};

// The calibration of both runs: the machine-speed factor each run is divided by.
//
// Under --normalize the factor is applied only when the machine-speed change is
// itself significant: every calibration benchmark moved in the same direction with
// p < calibration_alpha (0.01: stricter than the benchmarks' alpha, because a wrong
// division shifts every benchmark at once). A calibration median carries noise of its own, and
// dividing by a ratio that is indistinguishable from 1 only adds that noise to every benchmark (on
// a shared runner it turned a +5 % drift into +17 % "regressions"); a real drift of the machine is
// large and consistent, and is divided out. --normalize-always skips the test.
struct CalibrationInfo {
  std::vector<std::string> names;  // calibration benchmarks present in both runs
  double baseline_ns = 0;          // geometric mean of their medians
  double current_ns = 0;
  double p_value = 1;        // largest U-test p-value among them
  bool significant = false;  // all moved the same way with p < calibration_alpha
  bool applied = false;      // the comparison divided it out
  double speed_ratio() const { return current_ns / baseline_ns; }  // > 1: current machine slower
};

struct ComparisonReport {
  CompareOptions options;
  std::string baseline_source;
  std::string current_source;
  std::vector<BenchmarkComparison> rows;              // paired benchmarks, baseline order
  std::vector<BenchmarkComparison> calibration_rows;  // shown, never part of the verdict
  std::optional<CalibrationInfo> calibration;         // set whenever both runs have one
  std::vector<std::string> missing;                   // in the baseline only
  std::vector<std::string> added;                     // in the current run only
  std::vector<std::string> errored;  // "name: message" for runs that reported an error
  std::vector<std::string> notes;    // warnings worth reading (machines differ, too few reps)
  double geomean_ratio = 1;          // geometric mean of (1 + change) over rows
  int regressions = 0;
  int improvements = 0;

  int exit_code() const { return regressions > 0 ? 1 : 0; }
};

// The metric the runs' suite names ("metric" in bench/suites.json, recorded by
// hybrid-bench run as context.hybrid_suite.metric); real_time when neither names one
// or they disagree (then `note` says so).
Metric default_metric(const BenchmarkFile& baseline, const BenchmarkFile& current,
                      std::string* note = nullptr);

// Throws std::runtime_error naming the file when --normalize is asked for and a
// run has no calibration benchmark.
ComparisonReport compare_runs(const BenchmarkFile& baseline, const BenchmarkFile& current,
                              const CompareOptions& options);

}  // namespace hybrid::bench
