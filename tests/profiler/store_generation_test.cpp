// The run store's generation rows (profiler/generation_data.h) on a real SQLite
// file: every kind written and read back field for field, by run; latency
// percentiles against an independent computation (NumPy's linear rule, and
// known values); a bad row, a missing run and a read-only store are refused by
// name with nothing written; a deleted run takes its rows with it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "profiler/store/run_store.h"
#include "store_test_util.h"
#include "tests/common/error_of.h"

namespace hybrid::profiler {
namespace {

using test::exec_sql;
using test::query_sql;
using test::TempDir;

GenerationRow generate_row() {
  GenerationRow r;
  r.kind = GenerationKind::generate;
  r.model = "gpt2 124.44 M";
  r.dtype = "fp32";
  r.batch = 2;
  r.prompts = 4;
  r.prompt_tokens = 20;
  r.new_tokens = 64;
  r.ttft_ms = LatencyPercentiles{12.5, 20.25, 24.75};
  r.tpot_ms = LatencyPercentiles{8.0, 9.5, 11.0};
  r.tokens_per_s = 201.5;
  return r;
}

GenerationRow bench_row() {
  GenerationRow r;
  r.kind = GenerationKind::bench;
  r.test = "pp512";
  r.model = "llama 1.1 B";
  r.dtype = "bf16";
  r.prompts = 1;
  r.prompt_tokens = 512;
  r.new_tokens = 5;
  r.repetitions = 5;
  r.ttft_ms = LatencyPercentiles{900, 910, 915};
  r.tokens_per_s = 560.25;
  r.tokens_per_s_sd = 3.5;
  return r;
}

GenerationRow rollout_row(int64_t step) {
  GenerationRow r;
  r.kind = GenerationKind::rollout;
  r.model = "gpt2 124.44 M";
  r.dtype = "bf16";
  r.batch = 8;
  r.prompts = 8;
  r.prompt_tokens = 64;
  r.new_tokens = 256;
  r.ttft_ms = LatencyPercentiles{30, 40, 41};
  r.tpot_ms = LatencyPercentiles{20, 25, 31};
  r.tokens_per_s = 300;
  r.e2e_ms = 2000;
  r.gather_ms = 100;
  r.generate_ms = 1200;
  r.train_ms = 650;
  r.other_ms = -0.5;  // e2e minus the parts, rounded
  r.samples_per_s = 4;
  r.step = step;
  return r;
}

TEST(StoreGeneration, EveryKindReadsBackAsWrittenByRun) {
  TempDir dir;
  const auto db = dir / "gen.db";
  RunStore store(db);
  const int64_t a = store.create_run({}), b = store.create_run({});
  std::vector<GenerationRow> want = {generate_row(), bench_row(), rollout_row(0), rollout_row(1)};
  // Interleaved over the runs; read back by run, then as added.
  const int64_t runs[] = {b, a, b, a};
  for (size_t i = 0; i < want.size(); ++i) {
    want[i].id = store.add_generation(runs[i], want[i]);
    want[i].run_id = runs[i];
  }
  const auto all = store.generations();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0], want[1]);
  EXPECT_EQ(all[1], want[3]);
  EXPECT_EQ(all[2], want[0]);
  EXPECT_EQ(all[3], want[2]);
  EXPECT_EQ(store.generations(a), (std::vector<GenerationRow>{want[1], want[3]}));
  EXPECT_TRUE(store.generations(999).empty());
  // What SQLite holds: absent groups are NULL, the kind its name.
  EXPECT_EQ(query_sql(db,
                      "SELECT kind, test, tpot_p50_ms, tokens_per_s_sd, e2e_ms, step FROM "
                      "generations WHERE id = " +
                          std::to_string(want[1].id)),
            "bench|pp512|NULL|3.5|NULL|NULL");
  EXPECT_EQ(store.integrity_check(), "ok");
  // A reader of another process sees them.
  RunStore ro(db, OpenMode::read_only);
  EXPECT_EQ(ro.generations(), all);
}

// NumPy's default percentile (linear interpolation between order statistics),
// written out here, not through base::quantile.
double numpy_percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double h = (double(v.size()) - 1) * q;
  const size_t lo = size_t(std::floor(h));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (h - double(lo)) * (v[hi] - v[lo]);
}

TEST(StoreGeneration, PercentilesAreNumpysLinearOnes) {
  std::vector<double> one_to_hundred;
  for (int i = 100; i >= 1; --i) one_to_hundred.push_back(i);  // order does not matter
  const auto known = latency_percentiles(one_to_hundred);
  ASSERT_TRUE(known);
  // numpy.percentile(range(1, 101), [50, 90, 99]) = 50.5, 90.1, 99.01
  EXPECT_DOUBLE_EQ(known->p50, 50.5);
  EXPECT_DOUBLE_EQ(known->p90, 90.1);
  EXPECT_DOUBLE_EQ(known->p99, 99.01);

  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> ms(2.0, 0.5);
  for (size_t n : {1u, 2u, 7u, 37u, 1000u}) {
    std::vector<double> v(n);
    for (double& x : v) x = ms(rng);
    const auto p = latency_percentiles(v);
    ASSERT_TRUE(p);
    EXPECT_NEAR(p->p50, numpy_percentile(v, 0.5), 1e-12) << n;
    EXPECT_NEAR(p->p90, numpy_percentile(v, 0.9), 1e-12) << n;
    EXPECT_NEAR(p->p99, numpy_percentile(v, 0.99), 1e-12) << n;
  }
  EXPECT_FALSE(latency_percentiles({}));
}

TEST(StoreGeneration, BadRowsAndMissingRunsAreNamedAndWriteNothing) {
  TempDir dir;
  const auto db = dir / "gen.db";
  RunStore store(db);
  const int64_t run = store.create_run({});
  const std::string before = query_sql(db, "SELECT last_update FROM runs");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Bad {
    std::function<void(GenerationRow&)> spoil;
    std::string says;
  };
  const std::vector<Bad> bad = {
      {[](GenerationRow& r) { r.batch = 0; }, "batch must be at least 1, got 0"},
      {[](GenerationRow& r) { r.new_tokens = -1; }, "new_tokens must be >= 0, got -1"},
      {[](GenerationRow& r) { r.repetitions = 0; }, "repetitions must be at least 1, got 0"},
      {[&](GenerationRow& r) { r.tokens_per_s = nan; }, "tokens_per_s must be finite and >= 0"},
      {[](GenerationRow& r) { r.tokens_per_s = -3; }, "tokens_per_s must be finite and >= 0"},
      {[](GenerationRow& r) {
         r.tpot_ms = LatencyPercentiles{9, 8, 10};
       },
       "tpot_ms percentiles must not decrease: p50 9 p90 8 p99 10"},
      {[&](GenerationRow& r) { r.ttft_ms->p99 = nan; }, "ttft_ms must be finite and >= 0"},
      {[](GenerationRow& r) { r.test = "pp512"; }, "test 'pp512' on a generate row"},
      {[](GenerationRow& r) { r.kind = GenerationKind::bench; }, "a bench row needs its test"},
      {[](GenerationRow& r) { r.step = -2; }, "step must be >= 0, got -2"},
      {[](GenerationRow& r) { r.gather_ms = -1; }, "gather_ms must be finite and >= 0"},
      {[&](GenerationRow& r) { r.other_ms = nan; }, "other_ms must be finite"},
  };
  for (const Bad& b : bad) {
    GenerationRow r = generate_row();
    b.spoil(r);
    const std::string msg = hybrid::test::error_of<std::invalid_argument>(
        [&] { store.add_generation(run, r); }, "(accepted)");
    EXPECT_NE(msg.find("add_generation: run " + std::to_string(run) + ": " + b.says),
              std::string::npos)
        << msg;
  }
  const std::string missing = hybrid::test::error_of<StoreError>(
      [&] { store.add_generation(999, generate_row()); }, "(accepted)");
  EXPECT_EQ(missing, "database " + db + ": run 999 does not exist");
  EXPECT_EQ(query_sql(db, "SELECT count(*) FROM generations"), "0");
  EXPECT_EQ(query_sql(db, "SELECT last_update FROM runs"), before);

  RunStore ro(db, OpenMode::read_only);
  const std::string read_only = hybrid::test::error_of<StoreError>(
      [&] { ro.add_generation(run, generate_row()); }, "(accepted)");
  EXPECT_NE(read_only.find("is open read-only"), std::string::npos) << read_only;
  EXPECT_EQ(query_sql(db, "SELECT count(*) FROM generations"), "0");
}

TEST(StoreGeneration, ADeletedRunTakesItsRows) {
  TempDir dir;
  const auto db = dir / "gen.db";
  RunStore store(db);
  const int64_t gone = store.create_run({}), kept = store.create_run({});
  store.add_generation(gone, generate_row());
  store.add_generation(kept, rollout_row(3));
  exec_sql(db, "PRAGMA foreign_keys = ON; DELETE FROM runs WHERE id = " + std::to_string(gone));
  const auto left = store.generations();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].run_id, kept);
  EXPECT_EQ(left[0].step, 3);
}

}  // namespace
}  // namespace hybrid::profiler
