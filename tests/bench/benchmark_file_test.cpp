// Reading Google Benchmark JSON: real 1.7.1 output, generated fixtures, and every
// kind of malformed input, whose errors must name the file and the problem.
#include "bench/compare/benchmark_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bench_test_support.h"

namespace hybrid::bench {
namespace {

using testing::fixture;
using ::testing::HasSubstr;

// The error message of loading `name`, or "" when it loads.
std::string load_error(const std::string& name) {
  try {
    load_benchmark_file(fixture(name));
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(BenchmarkFile, ReadsRealGoogleBenchmarkOutput) {
  // Written by bench_calibration (Google Benchmark 1.7.1), 3 repetitions, with aggregates.
  BenchmarkFile f = load_benchmark_file(fixture("real_gbench_1.7.1.json"));
  ASSERT_EQ(f.benchmarks.size(), 2u);
  const BenchmarkSamples* c = f.find("calibration/compute");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->repetitions(), 3u);  // aggregates (mean, median, stddev, cv) are not samples
  EXPECT_EQ(c->cpu_time_ns.size(), 3u);
  EXPECT_EQ(f.context.value("library_build_type", ""), "debug");
  ASSERT_NE(f.find("canary/softmax"), nullptr);
  EXPECT_EQ(f.find("calibration/memory"), nullptr);
}

TEST(BenchmarkFile, ConvertsEveryUnitToNanoseconds) {
  BenchmarkFile f = load_benchmark_file(fixture("base.json"));
  // Nominal values of make_fixtures.py, within the 1 % sigma noise (+-5 sigma).
  const BenchmarkSamples* matmul = f.find("matmul/768x3072");     // 850 us
  const BenchmarkSamples* step = f.find("train_step/gpt2_tiny");  // 40 ms
  const BenchmarkSamples* ln = f.find("layernorm/768");           // 12000 ns
  ASSERT_TRUE(matmul && step && ln);
  for (double t : matmul->real_time_ns) EXPECT_NEAR(t, 850e3, 850e3 * 0.05);
  for (double t : step->real_time_ns) EXPECT_NEAR(t, 40e6, 40e6 * 0.05);
  for (double t : ln->real_time_ns) EXPECT_NEAR(t, 12000, 12000 * 0.05);
  EXPECT_EQ(matmul->time_unit, "us");
  EXPECT_EQ(matmul->repetitions(), 10u);
  EXPECT_DOUBLE_EQ(time_unit_to_ns("s"), 1e9);
  EXPECT_DOUBLE_EQ(time_unit_to_ns("ms"), 1e6);
}

TEST(BenchmarkFile, ErroredBenchmarksAreKeptWithTheirMessage) {
  BenchmarkFile f = load_benchmark_file(fixture("missing_new.json"));
  const BenchmarkSamples* broken = f.find("broken/op");
  ASSERT_NE(broken, nullptr);
  EXPECT_TRUE(broken->error);
  EXPECT_EQ(broken->error_message, "kernel returned NaN");
  EXPECT_EQ(broken->repetitions(), 0u);
}

TEST(BenchmarkFile, MissingFileIsNamed) {
  std::string e = load_error("does_not_exist.json");
  EXPECT_THAT(e, HasSubstr("does_not_exist.json"));
  EXPECT_THAT(e, HasSubstr("no such file"));
}

TEST(BenchmarkFile, NotJsonIsNamed) {
  std::string e = load_error("not_json.json");
  EXPECT_THAT(e, HasSubstr("not_json.json"));
  EXPECT_THAT(e, HasSubstr("not valid JSON"));
}

TEST(BenchmarkFile, JsonThatIsNotGoogleBenchmarkOutput) {
  std::string e = load_error("not_gbench.json");
  EXPECT_THAT(e, HasSubstr("not_gbench.json"));
  EXPECT_THAT(e, HasSubstr("not Google Benchmark output"));
}

TEST(BenchmarkFile, EmptyBenchmarkList) {
  EXPECT_THAT(load_error("empty_benchmarks.json"), HasSubstr("contains no benchmarks"));
}

TEST(BenchmarkFile, AggregatesOnlyMeansNoRepetitions) {
  std::string e = load_error("aggregates_only.json");
  EXPECT_THAT(e, HasSubstr("aggregates_only.json"));
  EXPECT_THAT(e, HasSubstr("no repetitions"));
  EXPECT_THAT(e, HasSubstr("--benchmark_report_aggregates_only=false"));
}

TEST(BenchmarkFile, SingleRepetitionIsRejected) {
  std::string e = load_error("single_rep.json");
  EXPECT_THAT(e, HasSubstr("single_rep.json"));
  EXPECT_THAT(e, HasSubstr("1 repetition"));
  EXPECT_THAT(e, HasSubstr("--benchmark_repetitions"));
}

TEST(BenchmarkFile, UnknownTimeUnit) {
  std::string e = load_error("bad_unit.json");
  EXPECT_THAT(e, HasSubstr("bad_unit.json"));
  EXPECT_THAT(e, HasSubstr("fortnights"));
}

TEST(BenchmarkFile, MissingTimeFieldIsNamed) {
  nlohmann::json doc = {
      {"benchmarks", {{{"name", "a"}, {"run_type", "iteration"}, {"cpu_time", 1.0}}}}};
  try {
    parse_benchmark_json(doc, "inline.json");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("inline.json"));
    EXPECT_THAT(e.what(), HasSubstr("real_time"));
  }
}

TEST(BenchmarkFile, MetricNames) {
  EXPECT_EQ(parse_metric("cpu_time"), Metric::CpuTime);
  EXPECT_EQ(parse_metric("real_time"), Metric::RealTime);
  EXPECT_THROW(parse_metric("wall"), std::invalid_argument);
}

}  // namespace
}  // namespace hybrid::bench
