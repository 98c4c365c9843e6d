// Suite definitions: the checked-in bench/suites.json is valid and every suite can be
// normalised; malformed definitions fail with the key at fault.
#include "bench/compare/suite.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

#include "bench_test_support.h"

namespace hybrid::bench {
namespace {

using ::testing::HasSubstr;

std::string parse_error(const std::string& text) {
  try {
    parse_suites(nlohmann::json::parse(text), "suites.json");
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(Suite, CheckedInSuitesAreValidAndCalibrated) {
  const auto path = std::filesystem::path(HYBRID_SOURCE_DIR) / "bench" / "suites.json";
  auto suites = load_suites(path);
  ASSERT_TRUE(suites.count("ci"));
  for (const auto& [name, suite] : suites) {
    SCOPED_TRACE(name);
    EXPECT_GE(suite.repetitions, 4);  // fewer can never reach p < 0.05
    // --normalize needs a calibration benchmark in every run of every suite.
    bool calibrated = false;
    for (const auto& e : suite.entries) {
      if (e.executable == "bench_calibration" &&
          std::regex_search("calibration/compute", std::regex(e.filter))) {
        calibrated = true;
      }
      EXPECT_GE(suite.repetitions_for(e), 4) << e.executable;
    }
    EXPECT_TRUE(calibrated);
  }
}

TEST(Suite, DefaultsAndOverrides) {
  auto suites = parse_suites(nlohmann::json::parse(R"({"suites": {"s": {
      "repetitions": 7,
      "entries": [
        {"executable": "bench_a"},
        {"executable": "bench_b", "filter": "^x/", "min_time": 0.25, "repetitions": 3,
         "mpirun_np": 2, "interleave": false, "min_warmup_time": 0.1, "timeout_s": 30,
         "args": ["--benchmark_time_unit=ms"], "env": {"OMP_NUM_THREADS": "1"}}]}}})"),
                             "inline");
  const Suite& s = suites.at("s");
  ASSERT_EQ(s.entries.size(), 2u);
  // bench_a takes the defaults (the suite's repetitions), bench_b overrides them.
  struct Knobs {
    std::string filter;
    double min_time_s;
    int repetitions, mpirun_np;
    bool interleave;
  };
  const Knobs want[] = {{".", 0.1, 7, 0, true}, {"^x/", 0.25, 3, 2, false}};
  for (size_t i = 0; i < 2; ++i) {
    const SuiteEntry& e = s.entries[i];
    SCOPED_TRACE(e.executable);
    EXPECT_EQ(e.filter, want[i].filter);
    EXPECT_DOUBLE_EQ(e.min_time_s, want[i].min_time_s);
    EXPECT_EQ(s.repetitions_for(e), want[i].repetitions);
    EXPECT_EQ(e.mpirun_np, want[i].mpirun_np);
    EXPECT_EQ(e.interleave, want[i].interleave);
  }
  const SuiteEntry &a = s.entries[0], &b = s.entries[1];
  EXPECT_DOUBLE_EQ(b.min_warmup_time_s.value(), 0.1);
  EXPECT_DOUBLE_EQ(b.timeout_s, 30);
  EXPECT_THAT(b.args, ::testing::ElementsAre("--benchmark_time_unit=ms"));
  ASSERT_EQ(b.env.size(), 1u);
  EXPECT_EQ(b.env[0].first, "OMP_NUM_THREADS");
  EXPECT_EQ(b.env[0].second, "1");
  EXPECT_TRUE(a.env.empty());

  auto mpi = parse_suites(
      nlohmann::json::parse(
          R"({"suites": {"m": {"entries": [{"executable": "bench_comm", "mpirun_np": 2}]}}})"),
      "inline");
  EXPECT_FALSE(mpi.at("m").entries[0].interleave);  // ranks must run the same order
}

TEST(Suite, ErrorsNameTheKey) {
  EXPECT_THAT(parse_error(R"({"suite": {}})"), HasSubstr("suites.json: suites is missing"));
  EXPECT_THAT(parse_error(R"({"suites": {"ci": {"entries": []}}})"),
              HasSubstr("suites.ci.entries must be a non-empty array"));
  EXPECT_THAT(parse_error(R"({"suites": {"ci": {"entries": [{"filter": "x"}]}}})"),
              HasSubstr("suites.ci.entries[0].executable is missing"));
  EXPECT_THAT(
      parse_error(R"({"suites": {"ci": {"entries": [{"executable": "b", "min_time": -1}]}}})"),
      HasSubstr("suites.ci.entries[0].min_time must be a positive number, got -1"));
  EXPECT_THAT(
      parse_error(R"({"suites": {"ci": {"entries": [{"executable": "b", "repetitions": 1}]}}})"),
      HasSubstr("suites.ci.entries[0].repetitions must be an integer >= 2, got 1"));
  EXPECT_THAT(
      parse_error(R"({"suites": {"ci": {"entries": [{"executable": "b", "filtr": "x"}]}}})"),
      HasSubstr("suites.ci.entries[0].filtr is not a known key"));
  EXPECT_THAT(
      parse_error(R"({"suites": {"ci": {"entries": [{"executable": "b", "env": {"A": 1}}]}}})"),
      HasSubstr("suites.ci.entries[0].env.A must be a non-empty string, got 1"));
  EXPECT_THAT(
      parse_error(
          R"({"suites": {"ci": {"repetitions": "ten", "entries": [{"executable": "b"}]}}})"),
      HasSubstr("suites.ci.repetitions must be an integer >= 2"));
  EXPECT_THAT(
      parse_error(R"({"suites": {"ci": {"metric": "wall", "entries": [{"executable": "b"}]}}})"),
      HasSubstr("suites.ci.metric must be real_time or cpu_time, got 'wall'"));
}

TEST(Suite, MetricIsTheSuitesChoice) {
  auto suites = parse_suites(nlohmann::json::parse(R"({"suites": {
      "a": {"metric": "cpu_time", "entries": [{"executable": "b"}]},
      "b": {"entries": [{"executable": "b"}]}}})"),
                             "x");
  EXPECT_EQ(suites.at("a").metric, "cpu_time");
  EXPECT_EQ(suites.at("b").metric, "");  // compare falls back to real_time
  // The checked-in ci suite is single-threaded and judged by CPU time.
  const auto path = std::filesystem::path(HYBRID_SOURCE_DIR) / "bench" / "suites.json";
  EXPECT_EQ(load_suites(path).at("ci").metric, "cpu_time");
}

TEST(Suite, UnknownSuiteListsTheKnownOnes) {
  auto suites =
      parse_suites(nlohmann::json::parse(R"({"suites": {"ci": {"entries": [{"executable": "b"}]},
                                           "nightly": {"entries": [{"executable": "b"}]}}})"),
                   "suites.json");
  try {
    find_suite(suites, "weekly", "suites.json");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("no suite named 'weekly' (suites: ci, nightly)"));
  }
  EXPECT_EQ(find_suite(suites, "nightly", "suites.json").name, "nightly");
}

}  // namespace
}  // namespace hybrid::bench
