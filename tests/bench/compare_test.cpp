// Verdicts of the comparer on the generated fixtures (tests/bench/fixtures/make_fixtures.py):
// identical runs pass, a 30 % shift in tight noise fails, the same shift in wide noise
// with few repetitions is not significant, missing/new benchmarks are listed, and
// normalisation cancels a uniformly slower machine.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "bench/compare/comparison.h"
#include "bench_test_support.h"

namespace hybrid::bench {
namespace {

using ::testing::ElementsAre;
using testing::fixture;
using ::testing::HasSubstr;

BenchmarkFile load(const std::string& name) { return load_benchmark_file(fixture(name)); }

const BenchmarkComparison& row(const ComparisonReport& r, const std::string& name) {
  for (const auto& row : r.rows) {
    if (row.name == name) return row;
  }
  throw std::runtime_error("no row " + name);
}

// A file built in memory: name -> samples (ns), for cases no fixture covers.
BenchmarkFile make_file(const std::string& source,
                        const std::vector<std::pair<std::string, std::vector<double>>>& data) {
  BenchmarkFile f;
  f.source = source;
  for (const auto& [name, samples] : data) {
    BenchmarkSamples b;
    b.name = name;
    b.real_time_ns = samples;
    b.cpu_time_ns = samples;
    f.benchmarks.push_back(b);
  }
  return f;
}

TEST(Compare, IdenticalInputsPass) {
  ComparisonReport r = compare_runs(load("base.json"), load("base.json"), {});
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_EQ(r.regressions, 0);
  EXPECT_EQ(r.improvements, 0);
  ASSERT_EQ(r.rows.size(), 4u);  // the calibration is listed apart
  for (const auto& row : r.rows) {
    EXPECT_EQ(row.verdict, Verdict::NoChange) << row.name;
    EXPECT_DOUBLE_EQ(row.change, 0.0);
    EXPECT_DOUBLE_EQ(row.p_value, 1.0);  // every pair tied
  }
  EXPECT_DOUBLE_EQ(r.geomean_ratio, 1.0);
  EXPECT_TRUE(r.missing.empty());
  EXPECT_TRUE(r.added.empty());
}

TEST(Compare, RerunFromTheSameDistributionPasses) {
  ComparisonReport r = compare_runs(load("base.json"), load("rerun.json"), {});
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_EQ(r.regressions + r.improvements, 0);
  for (const auto& row : r.rows) EXPECT_LT(std::abs(row.change), 0.02) << row.name;  // sigma 1 %
}

TEST(Compare, ThirtyPercentShiftWithTightNoiseFails) {
  ComparisonReport r = compare_runs(load("base.json"), load("shift30.json"), {});
  EXPECT_EQ(r.exit_code(), 1);
  EXPECT_EQ(r.regressions, 1);
  EXPECT_EQ(r.improvements, 1);

  const auto& matmul = row(r, "matmul/768x3072");
  EXPECT_EQ(matmul.verdict, Verdict::Regression);
  EXPECT_NEAR(matmul.change, 0.30, 0.03);  // 1.3x nominal, 1 % noise on both medians
  // 10 vs 10 completely separated: the smallest asymptotic p, 1.83e-4.
  EXPECT_NEAR(matmul.p_value, 1.826717911095504e-4, 1e-9);
  EXPECT_EQ(matmul.method, MannWhitneyMethod::Asymptotic);

  const auto& ln = row(r, "layernorm/768");
  EXPECT_EQ(ln.verdict, Verdict::Improvement);
  EXPECT_NEAR(ln.change, -0.30, 0.03);

  EXPECT_EQ(row(r, "attention/128").verdict, Verdict::NoChange);
  EXPECT_EQ(row(r, "train_step/gpt2_tiny").verdict, Verdict::NoChange);
  // (1.3 * 0.7 * 1 * 1)^(1/4) = 0.9767
  EXPECT_NEAR(r.geomean_ratio, std::pow(1.3 * 0.7, 0.25), 0.01);
}

TEST(Compare, ThirtyPercentShiftInWideNoiseIsNotSignificant) {
  // 5 repetitions with 35 % lognormal noise: the medians moved by more than the
  // threshold, but the U test cannot tell the shift from noise.
  ComparisonReport r = compare_runs(load("wide_base.json"), load("wide_shift30.json"), {});
  const auto& matmul = row(r, "matmul/768x3072");
  EXPECT_GT(matmul.change, 0.05);
  EXPECT_GT(matmul.p_value, 0.05);
  EXPECT_EQ(matmul.method, MannWhitneyMethod::Exact);
  EXPECT_EQ(matmul.verdict, Verdict::NotSignificant);
  EXPECT_EQ(r.regressions, 0);
  EXPECT_EQ(r.exit_code(), 0);
}

TEST(Compare, MissingAndNewBenchmarksAreListedNotFatal) {
  ComparisonReport r = compare_runs(load("base.json"), load("missing_new.json"), {});
  EXPECT_THAT(r.missing, ElementsAre("attention/128"));
  EXPECT_THAT(r.added, ElementsAre("gelu/3072", "broken/op"));
  EXPECT_EQ(r.rows.size(), 3u);  // matmul, layernorm, train_step
  EXPECT_EQ(r.exit_code(), 0);
}

TEST(Compare, ErroredBenchmarksAreListedNotCompared) {
  ComparisonReport r = compare_runs(load("missing_new.json"), load("missing_new.json"), {});
  ASSERT_EQ(r.errored.size(), 1u);
  EXPECT_THAT(r.errored[0], HasSubstr("broken/op: kernel returned NaN"));
  for (const auto& row : r.rows) EXPECT_NE(row.name, "broken/op");
  EXPECT_EQ(r.exit_code(), 0);
}

TEST(Compare, UniformlySlowerMachineIsARegressionWithoutNormalisation) {
  ComparisonReport r = compare_runs(load("base.json"), load("slow20.json"), {});
  EXPECT_EQ(r.regressions, 4);
  EXPECT_EQ(r.exit_code(), 1);
  ASSERT_TRUE(r.calibration.has_value());
  EXPECT_NEAR(r.calibration->speed_ratio(), 1.2, 0.02);
}

TEST(Compare, NormalisationCancelsAUniformlySlowerMachine) {
  CompareOptions options;
  options.normalize = true;
  ComparisonReport r = compare_runs(load("base.json"), load("slow20.json"), options);
  EXPECT_EQ(r.regressions, 0);
  EXPECT_EQ(r.improvements, 0);
  EXPECT_EQ(r.exit_code(), 0);
  ASSERT_EQ(r.rows.size(), 4u);
  for (const auto& row : r.rows) {
    EXPECT_NEAR(row.raw_change, 0.20, 0.03) << row.name;  // the machine is slower...
    EXPECT_LT(std::abs(row.change), 0.03) << row.name;    // ...the code is not
  }
  ASSERT_TRUE(r.calibration->significant);  // 10 vs 10 separated samples: p = 1.8e-4
  EXPECT_TRUE(r.calibration->applied);
  ASSERT_EQ(r.calibration_rows.size(), 1u);
  EXPECT_EQ(r.calibration_rows[0].name, "calibration/compute");
  EXPECT_NEAR(r.calibration_rows[0].change, 0.20, 0.03);  // shown raw, never divided by itself
}

TEST(Compare, NormalisationIgnoresACalibrationShiftThatIsNoise) {
  // The calibration medians differ by 5 % (110 -> 105 ns) but the samples overlap
  // completely: dividing by 0.95 would only add that noise to every benchmark.
  BenchmarkFile base = make_file(
      "a.json",
      {{"calibration/compute", {100, 130, 90, 110, 120, 95, 125}}, {"op", {50, 51, 52, 53, 54}}});
  BenchmarkFile cur = make_file(
      "b.json",
      {{"calibration/compute", {105, 95, 128, 115, 100, 92, 131}}, {"op", {50, 51, 52, 53, 54}}});
  CompareOptions options;
  options.normalize = true;
  ComparisonReport gated = compare_runs(base, cur, options);
  ASSERT_TRUE(gated.calibration.has_value());
  EXPECT_GT(gated.calibration->p_value, 0.05);
  EXPECT_FALSE(gated.calibration->significant);
  EXPECT_FALSE(gated.calibration->applied);
  EXPECT_NEAR(gated.calibration->speed_ratio(), 105.0 / 110.0, 1e-12);
  EXPECT_DOUBLE_EQ(gated.rows[0].change, 0.0);  // raw: identical samples

  options.normalize_always = true;
  ComparisonReport always = compare_runs(base, cur, options);
  EXPECT_TRUE(always.calibration->applied);
  EXPECT_NEAR(always.rows[0].change, 110.0 / 105.0 - 1.0, 1e-12);  // +4.8 %, noise made visible
}

TEST(Compare, CalibrationNeedsTheStricterLevelToBeDividedOut) {
  // 5 vs 5 separated calibration samples: exact p = 2/252 = 0.0079 < 0.01, divided out;
  // 4 vs 4: p = 2/70 = 0.029, significant at alpha 0.05 but not at 0.01, not divided out.
  BenchmarkFile base5 = make_file(
      "a.json", {{"calibration/compute", {10, 11, 12, 13, 14}}, {"op", {50, 51, 52, 53, 54}}});
  BenchmarkFile cur5 = make_file(
      "b.json", {{"calibration/compute", {20, 21, 22, 23, 24}}, {"op", {50, 51, 52, 53, 54}}});
  BenchmarkFile base4 =
      make_file("c.json", {{"calibration/compute", {10, 11, 12, 13}}, {"op", {50, 51, 52, 53}}});
  BenchmarkFile cur4 =
      make_file("d.json", {{"calibration/compute", {20, 21, 22, 23}}, {"op", {50, 51, 52, 53}}});
  CompareOptions options;
  options.normalize = true;
  ComparisonReport five = compare_runs(base5, cur5, options);
  EXPECT_NEAR(five.calibration->p_value, 2.0 / 252.0, 1e-12);
  EXPECT_TRUE(five.calibration->applied);
  EXPECT_NEAR(five.rows[0].change, 12.0 / 22.0 - 1.0, 1e-12);  // the "faster" code is the machine
  ComparisonReport four = compare_runs(base4, cur4, options);
  EXPECT_NEAR(four.calibration->p_value, 2.0 / 70.0, 1e-12);
  EXPECT_FALSE(four.calibration->applied);
  options.calibration_alpha = 0.05;
  EXPECT_TRUE(compare_runs(base4, cur4, options).calibration->applied);
}

TEST(Compare, NormalisationStillCatchesARealRegression) {
  CompareOptions options;
  options.normalize = true;
  ComparisonReport r = compare_runs(load("base.json"), load("shift30.json"), options);
  EXPECT_EQ(row(r, "matmul/768x3072").verdict, Verdict::Regression);
  EXPECT_EQ(r.exit_code(), 1);
}

TEST(Compare, NormaliseWithoutCalibrationNamesTheFile) {
  BenchmarkFile with = load("base.json");
  BenchmarkFile without = make_file("nocal.json", {{"matmul/768x3072", {1, 2, 3}}});
  CompareOptions options;
  options.normalize = true;
  try {
    compare_runs(with, without, options);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("nocal.json"));
    EXPECT_THAT(e.what(), HasSubstr("calibration"));
  }
}

TEST(Compare, SignificantButSmallerThanThresholdIsNoChange) {
  CompareOptions options;
  options.threshold = 0.35;
  ComparisonReport r = compare_runs(load("base.json"), load("shift30.json"), options);
  const auto& matmul = row(r, "matmul/768x3072");
  EXPECT_LT(matmul.p_value, 0.001);
  EXPECT_EQ(matmul.verdict, Verdict::NoChange);
  EXPECT_EQ(r.exit_code(), 0);
}

TEST(Compare, StricterAlphaMakesTheShiftNotSignificant) {
  CompareOptions options;
  options.alpha = 1e-5;  // below the smallest p 10 vs 10 repetitions can give (1.8e-4)
  ComparisonReport r = compare_runs(load("base.json"), load("shift30.json"), options);
  EXPECT_EQ(row(r, "matmul/768x3072").verdict, Verdict::NotSignificant);
  EXPECT_EQ(r.exit_code(), 0);
  EXPECT_THAT(r.notes, ::testing::Contains(HasSubstr("can never reach p < 1e-05")));
}

TEST(Compare, HolmCorrectionHoldsAlphaForTheWholeRun) {
  // Five benchmarks, each 4 vs 4 fully separated and 20 % slower: p = 2/70 = 0.029 each.
  // Alone each is a regression; as a family of five, Holm multiplies by 5 -> 0.143.
  std::vector<std::pair<std::string, std::vector<double>>> base, cur;
  for (int i = 0; i < 5; ++i) {
    base.push_back({"op" + std::to_string(i), {100, 101, 102, 103}});
    cur.push_back({"op" + std::to_string(i), {120, 121, 122, 123}});
  }
  BenchmarkFile a = make_file("a.json", base), b = make_file("b.json", cur);
  CompareOptions uncorrected;
  uncorrected.correction = Correction::None;
  EXPECT_EQ(compare_runs(a, b, uncorrected).regressions, 5);
  CompareOptions options;  // Holm is the default
  EXPECT_EQ(options.correction, Correction::Holm);
  ComparisonReport r = compare_runs(a, b, options);
  EXPECT_EQ(r.regressions, 0);
  for (const auto& row : r.rows) {
    EXPECT_NEAR(row.p_value, 2.0 / 70.0, 1e-12);
    EXPECT_NEAR(row.p_adjusted, 5 * 2.0 / 70.0, 1e-12);
    EXPECT_EQ(row.verdict, Verdict::NotSignificant);
  }
  // A clear regression survives the correction: 10 vs 10 separated, p = 1.8e-4 x 4.
  ComparisonReport shifted = compare_runs(load("base.json"), load("shift30.json"), options);
  EXPECT_EQ(row(shifted, "matmul/768x3072").verdict, Verdict::Regression);
  EXPECT_NEAR(row(shifted, "matmul/768x3072").p_adjusted, 4 * 1.826717911095504e-4, 1e-8);
  EXPECT_EQ(parse_correction("holm"), Correction::Holm);
  EXPECT_THROW(parse_correction("bonferroni"), std::invalid_argument);
}

TEST(Compare, CpuTimeMetricUsesCpuTimes) {
  CompareOptions options;
  options.metric = Metric::CpuTime;
  ComparisonReport cpu = compare_runs(load("base.json"), load("shift30.json"), options);
  ComparisonReport real = compare_runs(load("base.json"), load("shift30.json"), {});
  // The fixtures write cpu_time = 0.98 * real_time.
  EXPECT_NEAR(row(cpu, "matmul/768x3072").baseline_median_ns,
              0.98 * row(real, "matmul/768x3072").baseline_median_ns, 1e-6);
  EXPECT_EQ(row(cpu, "matmul/768x3072").verdict, Verdict::Regression);
}

TEST(Compare, TooFewRepetitionsAreNeverFlaggedAndSayWhy) {
  // 3 vs 3 fully separated, 30 % slower: the smallest possible p is 0.1.
  BenchmarkFile base = make_file("a.json", {{"op", {100, 101, 102}}});
  BenchmarkFile cur = make_file("b.json", {{"op", {130, 131, 132}}});
  ComparisonReport r = compare_runs(base, cur, {});
  EXPECT_NEAR(r.rows[0].p_value, 0.1, 1e-12);
  EXPECT_FALSE(r.rows[0].significance_reachable);
  EXPECT_EQ(r.rows[0].verdict, Verdict::NotSignificant);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_THAT(r.notes[0], HasSubstr("use at least 4 rounds"));  // 2/C(8,4) = 0.029
}

TEST(Compare, DifferentMachinesAreNoted) {
  BenchmarkFile a = make_file("a.json", {{"op", {1, 2, 3, 4}}});
  BenchmarkFile b = make_file("b.json", {{"op", {1, 2, 3, 4}}});
  a.context["hybrid_machine"]["cpu_model"] = "AMD EPYC 7B13";
  b.context["hybrid_machine"]["cpu_model"] = "Intel Xeon Platinum 8481C";
  ComparisonReport r = compare_runs(a, b, {});
  EXPECT_THAT(r.notes, ::testing::Contains(HasSubstr("CPU model differs")));
}

TEST(Compare, ThresholdParsing) {
  EXPECT_DOUBLE_EQ(parse_threshold("5%"), 0.05);
  EXPECT_DOUBLE_EQ(parse_threshold("12.5%"), 0.125);
  EXPECT_DOUBLE_EQ(parse_threshold("0.05"), 0.05);
  EXPECT_DOUBLE_EQ(parse_threshold("0"), 0.0);
  for (const char* bad : {"", "%", "abc", "-5%", "5%%", "5 %", "1e400"}) {
    EXPECT_THROW(parse_threshold(bad), std::invalid_argument) << bad;
  }
}

TEST(Compare, InvalidOptionsAreNamed) {
  CompareOptions options;
  options.alpha = 1.0;
  try {
    compare_runs(load("base.json"), load("base.json"), options);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("--alpha"));
  }
}

}  // namespace
}  // namespace hybrid::bench
