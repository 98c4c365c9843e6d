// The suite runner with real processes: bench_calibration (a real Google Benchmark
// executable built beside hybrid-bench) run with tiny minimum times, and the merge
// of several outputs into one Google Benchmark document.
#include "bench/compare/runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "bench/compare/benchmark_file.h"
#include "bench_test_support.h"

namespace hybrid::bench {
namespace {

using testing::bench_binary;
using ::testing::HasSubstr;

nlohmann::json iteration(const std::string& name, int index, int reps, double t) {
  return {{"name", name},        {"run_name", name},          {"run_type", "iteration"},
          {"repetitions", reps}, {"repetition_index", index}, {"real_time", t},
          {"cpu_time", t},       {"time_unit", "ns"}};
}

nlohmann::json aggregate(const std::string& name, const std::string& kind, double t) {
  return {{"name", name + "_" + kind}, {"run_name", name}, {"run_type", "aggregate"},
          {"aggregate_name", kind},    {"real_time", t},   {"cpu_time", t},
          {"time_unit", "ns"}};
}

TEST(Runner, MergeKeepsEveryRepetitionOfARepeatedBenchmark) {
  nlohmann::json first = {
      {"context", {{"executable", "bench_calibration"}, {"num_cpus", 2}}},
      {"benchmarks",
       {iteration("calibration/compute", 0, 2, 10), iteration("calibration/compute", 1, 2, 11),
        aggregate("calibration/compute", "median", 10.5)}}};
  nlohmann::json second = {{"context", {{"executable", "bench_kernels"}}},
                           {"benchmarks",
                            {iteration("matmul/768", 0, 2, 100), iteration("matmul/768", 1, 2, 101),
                             aggregate("matmul/768", "median", 100.5)}}};
  nlohmann::json third = {
      {"context", {{"executable", "bench_calibration"}}},
      {"benchmarks",
       {iteration("calibration/compute", 0, 2, 12), iteration("calibration/compute", 1, 2, 13),
        aggregate("calibration/compute", "median", 12.5)}}};
  nlohmann::json merged = merge_benchmark_outputs(
      {first, second, third}, {"bench_calibration", "bench_kernels", "bench_calibration"});

  EXPECT_EQ(merged["context"]["executable"], "bench_calibration");  // the first context
  std::vector<int> calibration_indices;
  int matmul_aggregates = 0;
  for (const auto& b : merged["benchmarks"]) {
    EXPECT_TRUE(b.contains("hybrid_executable"));
    if (b["run_name"] == "calibration/compute") {
      EXPECT_EQ(b["run_type"], "iteration");  // its partial aggregates are dropped
      EXPECT_EQ(b["repetitions"], 4);
      calibration_indices.push_back(b["repetition_index"].get<int>());
    } else if (b["run_type"] == "aggregate") {
      ++matmul_aggregates;
      EXPECT_EQ(b["hybrid_executable"], "bench_kernels");
    }
  }
  EXPECT_THAT(calibration_indices, ::testing::ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(matmul_aggregates, 1);  // a benchmark seen once keeps its aggregates

  BenchmarkFile f = parse_benchmark_json(merged, "merged");
  EXPECT_EQ(f.find("calibration/compute")->real_time_ns, (std::vector<double>{10, 11, 12, 13}));
}

TEST(Runner, CommandLineAsksForEveryRepetitionInJson) {
  SuiteEntry e;
  e.executable = "bench_comm";
  e.filter = "all_reduce/.*";
  e.min_time_s = 0.25;
  e.mpirun_np = 2;
  e.args = {"--benchmark_time_unit=ms"};
  auto argv = benchmark_command(e, 7, "/b/bench_comm", "/tmp/out.json", "/usr/bin/mpirun");
  EXPECT_THAT(argv, ::testing::ElementsAre(
                        "/usr/bin/mpirun", "-np", "2", "/b/bench_comm", "--benchmark_format=json",
                        "--benchmark_out_format=json", "--benchmark_out=/tmp/out.json",
                        "--benchmark_repetitions=7", "--benchmark_report_aggregates_only=false",
                        "--benchmark_filter=all_reduce/.*", "--benchmark_min_time=0.25",
                        "--benchmark_enable_random_interleaving=true", "--benchmark_time_unit=ms"));
}

TEST(Runner, MissingExecutableNamesItAndTheFolders) {
  try {
    find_executable("bench_nonexistent", "/nowhere");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("'bench_nonexistent' not found in /nowhere or /nowhere/bench"));
  }
}

Suite calibration_suite(std::vector<SuiteEntry> entries) {
  Suite s;
  s.name = "test";
  s.repetitions = 3;
  s.entries = std::move(entries);
  return s;
}

SuiteEntry calibration_entry(const std::string& filter) {
  SuiteEntry e;
  e.executable = "bench_calibration";
  e.filter = filter;
  e.min_time_s = 0.005;  // the numbers do not matter here, only the plumbing
  e.timeout_s = 120;
  return e;
}

RunOptions run_options() {
  RunOptions o;
  o.executable_dir = std::filesystem::path(HYBRID_BINARY_DIR) / "bench";
  o.source_dir = HYBRID_SOURCE_DIR;
  return o;
}

TEST(Runner, RunsARealSuiteAndMergesItsOutputs) {
  ASSERT_TRUE(std::filesystem::exists(bench_binary("bench_calibration")))
      << "build the bench_calibration target first";
  Suite suite =
      calibration_suite({calibration_entry("^calibration/compute$"), calibration_entry("^canary/"),
                         calibration_entry("^calibration/compute$")});
  suite.entries[1].interleave = false;
  nlohmann::json merged = run_suite(suite, run_options());

  BenchmarkFile f = parse_benchmark_json(merged, "merged");
  ASSERT_EQ(f.benchmarks.size(), 2u);
  EXPECT_EQ(f.find("calibration/compute")->repetitions(), 6u);  // run twice, 3 + 3
  EXPECT_EQ(f.find("canary/matmul")->repetitions(), 3u);
  for (const auto& b : f.benchmarks) {
    for (double t : b.real_time_ns) EXPECT_GT(t, 0.0) << b.name;
  }
  std::set<int> indices;
  for (const auto& b : merged["benchmarks"]) {
    if (b["run_name"] == "calibration/compute") indices.insert(b["repetition_index"].get<int>());
  }
  EXPECT_EQ(indices, (std::set<int>{0, 1, 2, 3, 4, 5}));

  const auto& ctx = merged["context"];
  EXPECT_TRUE(ctx.contains("num_cpus"));  // Google Benchmark's own context is kept
  EXPECT_TRUE(ctx["hybrid_machine"].contains("cpu_model"));
  EXPECT_TRUE(ctx["hybrid_machine"].contains("git_revision"));
  ASSERT_EQ(ctx["hybrid_suite"]["entries"].size(), 3u);
  EXPECT_THAT(ctx["hybrid_suite"]["entries"][1]["command"].get<std::string>(),
              HasSubstr("'--benchmark_filter=^canary/' "));
  EXPECT_THAT(ctx["hybrid_suite"]["entries"][0]["command"].get<std::string>(),
              HasSubstr("--benchmark_enable_random_interleaving=true"));
}

TEST(Runner, RepetitionOverrideAppliesToEveryEntry) {
  Suite suite = calibration_suite({calibration_entry("^canary/")});
  RunOptions o = run_options();
  o.repetitions = 2;
  BenchmarkFile f = parse_benchmark_json(run_suite(suite, o), "merged");
  EXPECT_EQ(f.find("canary/matmul")->repetitions(), 2u);
}

TEST(Runner, SingleRepetitionRoundsAreAllowed) {
  Suite suite = calibration_suite({calibration_entry("^canary/")});
  RunOptions o = run_options();
  o.repetitions = 1;
  nlohmann::json round = run_suite(suite, o);
  EXPECT_EQ(parse_benchmark_json(round, "round", 1).find("canary/matmul")->repetitions(), 1u);
  EXPECT_THROW(parse_benchmark_json(round, "round"), std::runtime_error);  // not comparable alone
  nlohmann::json merged = merge_benchmark_outputs({round, run_suite(suite, o)}, {});
  EXPECT_EQ(parse_benchmark_json(merged, "merged").find("canary/matmul")->repetitions(), 2u);
}

TEST(Runner, FilterMatchingNothingIsAnError) {
  Suite suite = calibration_suite({calibration_entry("^no_such_benchmark$")});
  try {
    run_suite(suite, run_options());
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("filter '^no_such_benchmark$' matches no benchmark"));
  }
}

TEST(Runner, FailingExecutableIsAnError) {
  SuiteEntry e;
  e.executable = "/bin/false";
  Suite suite = calibration_suite({e});
  try {
    run_suite(suite, run_options());
    FAIL() << "expected an error";
  } catch (const std::runtime_error& ex) {
    EXPECT_THAT(ex.what(), HasSubstr("(/bin/false) failed: exit code 1"));
    EXPECT_THAT(ex.what(), HasSubstr("command: /bin/false --benchmark_format=json"));
  }
}

TEST(Runner, MissingSuiteExecutableFailsBeforeRunningAnything) {
  SuiteEntry missing;
  missing.executable = "bench_not_built";
  Suite suite = calibration_suite({calibration_entry("^canary/"), missing});
  try {
    run_suite(suite, run_options());
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("suite 'test' entry 1"));
    EXPECT_THAT(e.what(), HasSubstr("'bench_not_built' not found"));
  }
}

}  // namespace
}  // namespace hybrid::bench
