// hybrid-bench as CI calls it: the real executable, its exit codes (0 pass, 1
// regression, 2 error), its report files, and `run` writing a baseline.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/subprocess.h"
#include "bench/compare/benchmark_file.h"
#include "bench_test_support.h"

namespace hybrid::bench {
namespace {

using testing::bench_binary;
using testing::fixture;
using ::testing::HasSubstr;
using testing::read_text;
using testing::ScratchDir;

struct Cli {
  int exit_code;
  std::string out, err;
};

Cli hybrid_bench(std::vector<std::string> args) {
  static int counter = 0;
  ScratchDir dir("cli" + std::to_string(counter++));
  args.insert(args.begin(), bench_binary("hybrid-bench").string());
  base::SubprocessOptions o;
  o.stdout_file = dir / "out.txt";
  o.stderr_file = dir / "err.txt";
  o.timeout_s = 300;
  const base::SubprocessResult r = base::run_subprocess(args, o);
  EXPECT_TRUE(r.exited) << r.describe();
  return {r.exit_code, read_text(dir / "out.txt"), read_text(dir / "err.txt")};
}

class HybridBenchCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(bench_binary("hybrid-bench")))
        << "build the hybrid-bench target first";
  }
};

TEST_F(HybridBenchCli, IdenticalRunsExitZero) {
  Cli c = hybrid_bench({"compare", fixture("base.json"), fixture("base.json")});
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_THAT(c.out, HasSubstr("0 regressions, 0 improvements, 4 compared"));
}

TEST_F(HybridBenchCli, RegressionExitsOneAndWritesReports) {
  ScratchDir dir("reports");
  Cli c = hybrid_bench({"compare", fixture("base.json"), fixture("shift30.json"), "--markdown",
                        dir / "report.md", "--json", dir / "report.json"});
  EXPECT_EQ(c.exit_code, 1) << c.err;
  EXPECT_THAT(c.out, HasSubstr("REGRESSION"));
  EXPECT_THAT(read_text(dir / "report.md"), HasSubstr("regression detected"));
  nlohmann::json j = nlohmann::json::parse(read_text(dir / "report.json"));
  EXPECT_EQ(j["regressions"], 1);
  EXPECT_EQ(j["exit_code"], 1);
  // Only the two reports: no temporary file is left beside them.
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 2);
}

TEST_F(HybridBenchCli, NormaliseTurnsASlowerMachineIntoAPass) {
  EXPECT_EQ(hybrid_bench({"compare", fixture("base.json"), fixture("slow20.json")}).exit_code, 1);
  Cli c = hybrid_bench({"compare", fixture("base.json"), fixture("slow20.json"), "--normalize"});
  EXPECT_EQ(c.exit_code, 0) << c.out;
  EXPECT_THAT(c.out, ::testing::ContainsRegex("machine speed ratio 1\\.(1[89]|2[01])"));
}

TEST_F(HybridBenchCli, ThresholdAndAlphaOptionsAreUsed) {
  EXPECT_EQ(
      hybrid_bench({"compare", fixture("base.json"), fixture("shift30.json"), "--threshold", "35%"})
          .exit_code,
      0);
  EXPECT_EQ(
      hybrid_bench({"compare", fixture("base.json"), fixture("shift30.json"), "--alpha", "0.00001"})
          .exit_code,
      0);
  EXPECT_EQ(hybrid_bench({"compare", fixture("base.json"), fixture("shift30.json"), "--metric",
                          "cpu_time", "--threshold", "0.1"})
                .exit_code,
            1);
}

TEST_F(HybridBenchCli, ErrorsExitTwoAndNameTheInput) {
  Cli missing = hybrid_bench({"compare", fixture("base.json"), "/nonexistent/new.json"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("/nonexistent/new.json: no such file"));

  Cli not_json = hybrid_bench({"compare", fixture("not_json.json"), fixture("base.json")});
  EXPECT_EQ(not_json.exit_code, 2);
  EXPECT_THAT(not_json.err, HasSubstr("not_json.json: not valid JSON"));

  Cli threshold =
      hybrid_bench({"compare", fixture("base.json"), fixture("base.json"), "--threshold", "lots"});
  EXPECT_EQ(threshold.exit_code, 2);
  EXPECT_THAT(threshold.err, HasSubstr("--threshold"));

  Cli metric =
      hybrid_bench({"compare", fixture("base.json"), fixture("base.json"), "--metric", "wall"});
  EXPECT_EQ(metric.exit_code, 2);
  EXPECT_THAT(metric.err, HasSubstr("--metric"));

  EXPECT_EQ(hybrid_bench({}).exit_code, 2);  // no subcommand
  EXPECT_EQ(hybrid_bench({"compare", "only_one.json"}).exit_code, 2);
  EXPECT_EQ(hybrid_bench({"--help"}).exit_code, 0);
}

TEST_F(HybridBenchCli, RunWritesOutputAndBaseline) {
  ScratchDir dir("run");
  std::ofstream(dir / "suites.json") << R"({"suites": {"tiny": {"repetitions": 3, "entries": [
      {"executable": "bench_calibration", "filter": "^(calibration/compute|canary/matmul)$",
       "min_time": 0.005}]}}})";
  Cli c = hybrid_bench({"run", "--suite", "tiny", "--suites", dir / "suites.json", "--out",
                        dir / "out" / "run.json", "--update-baseline", "--baseline-dir",
                        dir / "baselines", "--repetitions", "4"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_THAT(c.err, HasSubstr("[1/1] bench_calibration"));
  EXPECT_THAT(c.err, HasSubstr("ETA"));
  BenchmarkFile run = load_benchmark_file(dir / "out" / "run.json");
  BenchmarkFile baseline = load_benchmark_file(dir / "baselines" / "tiny.json");
  EXPECT_EQ(run.find("canary/matmul")->repetitions(), 4u);
  EXPECT_EQ(baseline.benchmarks.size(), 2u);
  EXPECT_EQ(run.context["hybrid_suite"]["name"], "tiny");

  // The fresh run compares against its own baseline without error.
  Cli cmp = hybrid_bench({"compare", dir / "baselines" / "tiny.json", dir / "out" / "run.json",
                          "--normalize", "--quiet"});
  EXPECT_NE(cmp.exit_code, 2) << cmp.err;
  EXPECT_TRUE(cmp.out.empty());
}

TEST_F(HybridBenchCli, RunWithUnknownSuiteNamesTheFile) {
  ScratchDir dir("unknown");
  std::ofstream(dir / "suites.json")
      << R"({"suites": {"tiny": {"entries": [{"executable": "bench_calibration"}]}}})";
  Cli c = hybrid_bench(
      {"run", "--suite", "huge", "--suites", dir / "suites.json", "--out", dir / "x.json"});
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_THAT(c.err, HasSubstr("no suite named 'huge' (suites: tiny)"));
  EXPECT_FALSE(std::filesystem::exists(dir / "x.json"));
}

TEST_F(HybridBenchCli, MergeKeepsEveryRepetition) {
  ScratchDir dir("merge");
  Cli c = hybrid_bench(
      {"merge", "--out", dir / "all.json", fixture("base.json"), fixture("rerun.json")});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  BenchmarkFile merged = load_benchmark_file(dir / "all.json");
  BenchmarkFile base = load_benchmark_file(fixture("base.json"));
  BenchmarkFile rerun = load_benchmark_file(fixture("rerun.json"));
  ASSERT_EQ(merged.benchmarks.size(), base.benchmarks.size());
  for (const auto& b : merged.benchmarks) {
    std::vector<double> expected = base.find(b.name)->real_time_ns;
    const auto& more = rerun.find(b.name)->real_time_ns;
    expected.insert(expected.end(), more.begin(), more.end());
    EXPECT_EQ(b.real_time_ns, expected) << b.name;  // 10 + 10, in input order
  }
  EXPECT_EQ(merged.context["hybrid_merged_from"].size(), 2u);

  // Single-repetition rounds are what merge is for: two of them make a comparable run.
  Cli rounds = hybrid_bench({"merge", "--out", dir / "rounds.json", fixture("single_rep.json"),
                             fixture("single_rep.json")});
  ASSERT_EQ(rounds.exit_code, 0) << rounds.err;
  EXPECT_EQ(load_benchmark_file(dir / "rounds.json").benchmarks[0].repetitions(), 2u);

  Cli bad = hybrid_bench(
      {"merge", "--out", dir / "bad.json", fixture("base.json"), fixture("not_gbench.json")});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("not_gbench.json"));
  EXPECT_FALSE(std::filesystem::exists(dir / "bad.json"));
}

// `ab` with real processes: the same bench_calibration build on both sides, the
// current side slowed through the test hook HYBRID_BENCH_SLOWDOWN. The judged
// benchmark is scripted/canary, whose manual time is scripted (100 us, times the
// factor): every slowed round is exactly twice every baseline round, so the verdict
// follows from ab's plumbing and the comparison, never from the machine's load (a
// measured canary's rounds can overlap on a busy machine; bench-ci-check.sh measures).
TEST_F(HybridBenchCli, AbAlternatesRoundsAndCatchesAnInjectedSlowdown) {
  ScratchDir dir("ab");
  std::ofstream(dir / "suites.json") << R"({"suites": {"tiny": {"metric": "real_time", "entries": [
      {"executable": "bench_calibration", "filter": "^(calibration/compute|scripted/canary/manual_time)$",
       "min_time": 0.005}]}}})";
  const std::string build = bench_binary("bench_calibration").parent_path().string();
  Cli c = hybrid_bench({"ab", "--suite", "tiny", "--suites", dir / "suites.json",
                        "--baseline-build", build, "--current-build", build, "--rounds", "8",
                        "--current-env", "HYBRID_BENCH_SLOWDOWN=^scripted/canary=1.0", "--out-dir",
                        dir / "kept", "--json", dir / "report.json"});
  ASSERT_EQ(c.exit_code, 1) << c.out << c.err;
  EXPECT_THAT(c.out, HasSubstr("unpaired rounds (Mann-Whitney U); metric real_time"));
  EXPECT_THAT(c.err, HasSubstr("round 8/8 done"));
  nlohmann::json report = nlohmann::json::parse(read_text(dir / "report.json"));
  ASSERT_EQ(report["benchmarks"].size(), 1u);  // the canary; the calibration is not judged
  EXPECT_EQ(report["benchmarks"][0]["verdict"], "REGRESSION");
  EXPECT_EQ(report["benchmarks"][0]["baseline_repetitions"], 8);  // rounds
  // 8 rounds against 8, every slowed round slower: fully separated (ties within
  // each side take the normal approximation, p = 1.4e-4).
  EXPECT_LT(report["benchmarks"][0]["p_value"].get<double>(), 0.01);
  EXPECT_NEAR(report["benchmarks"][0]["change"].get<double>(), 1.0, 1e-9);  // exactly 2x

  BenchmarkFile base = load_benchmark_file(dir / "kept" / "baseline.json");
  BenchmarkFile cur = load_benchmark_file(dir / "kept" / "current.json");
  EXPECT_EQ(base.find("scripted/canary/manual_time")->rounds,
            (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(cur.find("scripted/canary/manual_time")->rounds,
            (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(cur.context["hybrid_ab"]["env"]["HYBRID_BENCH_SLOWDOWN"], "^scripted/canary=1.0");
  EXPECT_TRUE(base.context["hybrid_ab"]["env"].empty());
  const auto& order = base.context["hybrid_ab"]["order"];
  EXPECT_EQ(order[0], "baseline,current");  // AB, BA, ...: neither side always first
  EXPECT_EQ(order[1], "current,baseline");

  Cli one_round = hybrid_bench({"ab", "--suite", "tiny", "--suites", dir / "suites.json",
                                "--baseline-build", build, "--rounds", "1"});
  EXPECT_EQ(one_round.exit_code, 2);
  EXPECT_THAT(one_round.err, HasSubstr("--rounds"));
  Cli bad_env = hybrid_bench({"ab", "--suite", "tiny", "--suites", dir / "suites.json",
                              "--baseline-build", build, "--current-env", "NOVALUE"});
  EXPECT_EQ(bad_env.exit_code, 2);
  EXPECT_THAT(bad_env.err, HasSubstr("--current-env must be NAME=VALUE, got 'NOVALUE'"));
}

TEST_F(HybridBenchCli, MergeNumbersTheRoundsOfItsInputs) {
  ScratchDir dir("merge-rounds");
  Cli c = hybrid_bench({"merge", "--out", dir / "all.json", fixture("single_rep.json"),
                        fixture("single_rep.json"), fixture("single_rep.json")});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  BenchmarkFile merged = load_benchmark_file(dir / "all.json");
  EXPECT_EQ(merged.benchmarks[0].rounds, (std::vector<int>{0, 1, 2}));  // one per input
}

TEST_F(HybridBenchCli, ListShowsTheCheckedInSuites) {
  Cli c = hybrid_bench({"list"});
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_THAT(c.out, HasSubstr("ci: "));
  EXPECT_THAT(c.out, HasSubstr("bench_calibration"));
}

}  // namespace
}  // namespace hybrid::bench
