// The comparer's decisions with rounds (one round = one process) on constructed
// inputs that imitate a shared machine: a drift of the machine's speed that both
// sides of a round share, each process's own luck, and per-repetition jitter.
// Unchanged code must not be flagged; a 30 % slower benchmark must be, by the default
// (unpaired) test and by the paired one; one process per side (the README's old
// single-run command) must never be flagged.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "bench/compare/comparison.h"

namespace hybrid::bench {
namespace {

using ::testing::HasSubstr;

// A fixed pseudo-random normal sequence (LCG + Box-Muller), the same everywhere.
class Noise {
 public:
  explicit Noise(unsigned long long seed) : state_(seed) {}
  double normal() {
    const double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  double uniform() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return (static_cast<double>(state_ >> 11) + 0.5) / static_cast<double>(1ULL << 53);
  }
  unsigned long long state_;
};

constexpr const char* kNames[] = {"canary/matmul", "matmul_forward",    "matmul_backward",
                                  "gelu_forward",  "layernorm_forward", "attention_forward"};

struct Machine {
  double drift_sd = 0.10;    // shared by both sides of a round (log scale)
  double process_sd = 0.04;  // each process's own luck
  double rep_sd = 0.01;      // between repetitions of one process
};

// One side of an A/B run: `rounds` rounds x `reps` repetitions of every benchmark,
// plus the calibration; `slower` multiplies one benchmark's time.
BenchmarkFile side(int rounds, int reps, const std::vector<double>& drift, const Machine& m,
                   Noise& noise, const std::string& slowed = "", double slower = 1.0) {
  BenchmarkFile f;
  f.source = slowed.empty() ? "base" : "current";
  std::vector<std::string> names(std::begin(kNames), std::end(kNames));
  names.push_back("calibration/compute");
  for (const auto& name : names) {
    BenchmarkSamples b;
    b.name = name;
    for (int r = 0; r < rounds; ++r) {
      const double process = drift[r] + m.process_sd * noise.normal();
      for (int k = 0; k < reps; ++k) {
        const double t = 1000.0 * std::exp(process + m.rep_sd * noise.normal()) *
                         (name == slowed ? slower : 1.0);
        b.real_time_ns.push_back(t);
        b.cpu_time_ns.push_back(t);
        b.rounds.push_back(r);
      }
    }
    f.benchmarks.push_back(b);
  }
  return f;
}

std::vector<double> drifts(int rounds, const Machine& m, Noise& noise) {
  std::vector<double> d(rounds);
  for (double& x : d) x = m.drift_sd * noise.normal();
  return d;
}

const BenchmarkComparison& row(const ComparisonReport& r, const std::string& name) {
  for (const auto& row : r.rows) {
    if (row.name == name) return row;
  }
  throw std::runtime_error("no row " + name);
}

TEST(CompareRounds, UnchangedCodeUnderDriftIsNeverFlaggedWithTheDefaults) {
  // 200 simulated A/B runs of 10 rounds on a machine whose speed moves by 10 % (sd)
  // from round to round: the defaults (unpaired over rounds, 10 %, Holm) flag none
  // of them, and neither does the paired test.
  Noise noise(7);
  const Machine m;
  CompareOptions paired;
  paired.test = TestKind::Paired;
  int alarms = 0, paired_alarms = 0;
  for (int run = 0; run < 200; ++run) {
    const std::vector<double> d = drifts(10, m, noise);
    const BenchmarkFile base = side(10, 1, d, m, noise), cur = side(10, 1, d, m, noise);
    const ComparisonReport r = compare_runs(base, cur, {});
    ASSERT_EQ(r.rows.size(), 6u);
    EXPECT_FALSE(r.rows[0].paired);
    alarms += r.regressions > 0;
    paired_alarms += compare_runs(base, cur, paired).regressions > 0;
  }
  EXPECT_EQ(alarms, 0);
  EXPECT_EQ(paired_alarms, 0);
}

TEST(CompareRounds, ThirtyPercentSlowerIsCaughtUnderTheSameDrift) {
  Noise noise(11);
  const Machine m;
  CompareOptions paired;
  paired.test = TestKind::Paired;
  int caught = 0, other_flags = 0, paired_caught = 0;
  for (int run = 0; run < 200; ++run) {
    const std::vector<double> d = drifts(10, m, noise);
    const BenchmarkFile base = side(10, 1, d, m, noise);
    const BenchmarkFile cur = side(10, 1, d, m, noise, "gelu_forward", 1.3);
    const ComparisonReport r = compare_runs(base, cur, {});
    caught += row(r, "gelu_forward").verdict == Verdict::Regression;
    other_flags += r.regressions - (row(r, "gelu_forward").verdict == Verdict::Regression);
    paired_caught +=
        row(compare_runs(base, cur, paired), "gelu_forward").verdict == Verdict::Regression;
  }
  // In this model the drift (10 %) dwarfs each process's luck (4 %), the case pairing
  // is made for: the unpaired test, which sees the drift as noise, misses 1 of 200
  // (seed 11); the paired one none. On the real runner the opposite happened (next
  // test), so the default is the unpaired test and both are held to >= 99 %.
  EXPECT_GE(caught, 198);
  EXPECT_EQ(other_flags, 0);
  EXPECT_EQ(paired_caught, 200);
}

TEST(CompareRounds, OneWildProcessCostsThePairedTestItsSignificanceNotTheUnpairedOne) {
  // Measured on the shared runner (docs/reliability.md): gelu 30 % slower, nine
  // rounds at 1.11-1.38x, and one round where the baseline's process ran 1.6x slow
  // (ratio 0.78). Paired, that round has rank 8 of 10: p = 0.027, times 6 (Holm over
  // the ci suite) = 0.16, missed. Unpaired, the slow baseline is one high value among
  // ten: still caught.
  const std::vector<double> ratios = {0.778, 1.273, 1.248, 1.108, 1.378,
                                      1.298, 1.267, 1.271, 1.36,  1.351};
  const std::vector<double> base_times = {1.6, 1.0, 1.02, 0.98, 1.01, 0.99, 1.0, 1.03, 0.97, 1.0};
  BenchmarkFile base, cur;
  for (const char* name : kNames) {
    BenchmarkSamples b, c;
    b.name = c.name = name;
    for (int r = 0; r < 10; ++r) {
      const double jitter = 1 + 0.01 * ((r * 7 + static_cast<int>(b.name.size())) % 5 - 2);
      b.real_time_ns.push_back(1000 * base_times[r]);
      c.real_time_ns.push_back(1000 * base_times[r] *
                               (b.name == "gelu_forward" ? ratios[r] : jitter));
      b.rounds.push_back(r);
      c.rounds.push_back(r);
    }
    b.cpu_time_ns = b.real_time_ns;
    c.cpu_time_ns = c.real_time_ns;
    base.benchmarks.push_back(b);
    cur.benchmarks.push_back(c);
  }
  EXPECT_EQ(row(compare_runs(base, cur, {}), "gelu_forward").verdict, Verdict::Regression);
  CompareOptions paired;
  paired.test = TestKind::Paired;
  const ComparisonReport p = compare_runs(base, cur, paired);
  EXPECT_NEAR(row(p, "gelu_forward").p_value, 0.02734375, 1e-12);  // 2 * 14 / 1024
  EXPECT_EQ(row(p, "gelu_forward").verdict, Verdict::NotSignificant);
}

TEST(CompareRounds, PairedRowIsTheMedianRatioWithAnExactSignedRankP) {
  BenchmarkFile base, cur;
  BenchmarkSamples b, c;
  b.name = c.name = "op";
  for (int r = 0; r < 10; ++r) {
    const double drift = 1.0 + 0.5 * r;  // the machine slows down 5.5x over the run
    b.real_time_ns.push_back(100 * drift);
    c.real_time_ns.push_back(130 * drift * (1 + 0.001 * r));  // ratios 1.3 ... 1.3117
    b.rounds.push_back(r);
    c.rounds.push_back(r);
  }
  b.cpu_time_ns = b.real_time_ns;
  c.cpu_time_ns = c.real_time_ns;
  base.benchmarks = {b};
  cur.benchmarks = {c};
  CompareOptions paired;
  paired.test = TestKind::Paired;
  const ComparisonReport r = compare_runs(base, cur, paired);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_TRUE(r.rows[0].paired);
  EXPECT_EQ(r.rows[0].pairs, 10u);
  EXPECT_NEAR(r.rows[0].change, 1.3 * 1.0045 - 1, 1e-12);  // median of 1.3 (1 + 0.001 r)
  EXPECT_DOUBLE_EQ(r.rows[0].p_value, 2.0 / 1024.0);
  EXPECT_EQ(r.rows[0].verdict, Verdict::Regression);

  // Unpaired (the default), the same samples overlap (the drift is wider than the
  // change): no verdict. Pairing pays when drift dominates and processes behave.
  const ComparisonReport u = compare_runs(base, cur, {});
  EXPECT_FALSE(u.rows[0].paired);
  EXPECT_GT(u.rows[0].p_value, 0.05);
  EXPECT_EQ(u.rows[0].verdict, Verdict::NotSignificant);
}

TEST(CompareRounds, OneProcessPerSideIsNeverFlaggedAndSaysWhy) {
  // The case: two single runs of 10 repetitions each, the second on a machine
  // 15 % slower for its whole duration. Counting repetitions as samples flags it;
  // counting processes (the default) cannot, and the note says what to do instead.
  Noise noise(3);
  const Machine m{0, 0, 0.01};
  const BenchmarkFile base = side(1, 10, {0.0}, m, noise);
  const BenchmarkFile cur = side(1, 10, {std::log(1.15)}, m, noise);
  const ComparisonReport r = compare_runs(base, cur, {});
  EXPECT_EQ(r.regressions, 0);
  EXPECT_FALSE(r.rows[0].paired);
  EXPECT_EQ(r.rows[0].baseline_repetitions, 1u);  // one round each
  EXPECT_THAT(r.notes, ::testing::Contains(HasSubstr("hybrid-bench ab")));

  // The same data with the rounds forgotten (raw Google Benchmark files): 10 vs 10
  // "independent" repetitions, every benchmark flagged.
  BenchmarkFile raw_base = base, raw_cur = cur;
  for (auto* f : {&raw_base, &raw_cur}) {
    for (auto& b : f->benchmarks) b.rounds.clear();
  }
  EXPECT_EQ(compare_runs(raw_base, raw_cur, {}).regressions, 6);
}

TEST(CompareRounds, PairedUsesTheRoundsPresentInBoth) {
  Noise noise(5);
  const Machine m;
  const std::vector<double> d = drifts(8, m, noise);
  BenchmarkFile base = side(8, 2, d, m, noise), cur = side(6, 2, d, m, noise);
  const ComparisonReport r = compare_runs(base, cur, {});
  EXPECT_FALSE(r.rows[0].paired);
  EXPECT_EQ(r.rows[0].baseline_repetitions, 8u);  // rounds, not the 16 repetitions
  EXPECT_EQ(r.rows[0].current_repetitions, 6u);
  CompareOptions paired;
  paired.test = TestKind::Paired;  // the 6 rounds in both
  EXPECT_EQ(compare_runs(base, cur, paired).rows[0].pairs, 6u);
  EXPECT_EQ(parse_test_kind("unpaired"), TestKind::Unpaired);
  EXPECT_THROW(parse_test_kind("t-test"), std::invalid_argument);
}

TEST(CompareRounds, CalibrationThatMovedIsNotedForUnpairedRows) {
  Noise noise(9);
  const Machine m{0, 0, 0.01};
  const BenchmarkFile base = side(3, 4, {0, 0, 0}, m, noise);
  const BenchmarkFile cur = side(2, 4, {0.08, 0.08}, m, noise);  // about 8 % slower
  CompareOptions options;
  options.normalize = true;
  const ComparisonReport r = compare_runs(base, cur, options);
  ASSERT_TRUE(r.calibration);
  EXPECT_FALSE(r.calibration->applied);  // 3 vs 2 rounds cannot be significant at 0.01
  EXPECT_NEAR(r.calibration->speed_ratio(), std::exp(0.08), 0.01);
  EXPECT_THAT(r.notes, ::testing::Contains(HasSubstr("the calibration moved +")));
}

TEST(CompareRounds, AnOlderHybridBenchRunIsOneRoundAndRawFilesAreNot) {
  auto doc = [](nlohmann::json context) {
    nlohmann::json d = {{"context", context}, {"benchmarks", nlohmann::json::array()}};
    for (int i = 0; i < 3; ++i) {
      d["benchmarks"].push_back({{"name", "op"},
                                 {"run_type", "iteration"},
                                 {"real_time", 10 + i},
                                 {"cpu_time", 10 + i},
                                 {"time_unit", "ns"}});
    }
    return d;
  };
  // Written by hybrid-bench run before rounds existed: one process, one round.
  const BenchmarkFile old_run =
      parse_benchmark_json(doc({{"hybrid_suite", {{"name", "ci"}}}}), "a");
  EXPECT_EQ(old_run.find("op")->rounds, (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(round_samples(*old_run.find("op"), Metric::RealTime).size(), 1u);
  // Merged single-repetition rounds of that time, and raw Google Benchmark output:
  // nothing says which process each repetition came from.
  nlohmann::json merged_context = {{"hybrid_suite", {{"name", "ci"}}},
                                   {"hybrid_merged_from", {"r1.json", "r2.json", "r3.json"}}};
  EXPECT_TRUE(parse_benchmark_json(doc(merged_context), "b").find("op")->rounds.empty());
  EXPECT_TRUE(parse_benchmark_json(doc(nlohmann::json::object()), "c").find("op")->rounds.empty());
}

TEST(CompareRounds, MetricComesFromTheSuite) {
  BenchmarkFile a, b;
  a.context["hybrid_suite"]["metric"] = "cpu_time";
  b.context["hybrid_suite"]["metric"] = "cpu_time";
  EXPECT_EQ(default_metric(a, b), Metric::CpuTime);
  b.context["hybrid_suite"]["metric"] = "real_time";
  std::string note;
  EXPECT_EQ(default_metric(a, b, &note), Metric::RealTime);
  EXPECT_THAT(note, HasSubstr("'cpu_time' vs 'real_time'"));
  EXPECT_EQ(default_metric(BenchmarkFile{}, BenchmarkFile{}), Metric::RealTime);
}

}  // namespace
}  // namespace hybrid::bench
