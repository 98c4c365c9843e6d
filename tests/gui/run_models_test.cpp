// The run overview, collectives and compare models over a real run store,
// against figures computed here from the fixture's own books.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "gui/model/comm_model.h"
#include "gui/model/compare_model.h"
#include "gui/model/database.h"
#include "gui/model/run_overview.h"
#include "tests/gui/view_test_util.h"

namespace hybrid::gui {
namespace {

using test::FixtureRun;
using test::FixtureRunSpec;
using test::FixtureWriter;

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

class RunModels : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto path = dir_ / "hybrid.db";
    {
      profiler::RunStore store(path);
      FixtureWriter w(store);
      FixtureRunSpec a;
      a.name = "zero1";
      a.zero_stage = 1;
      a_ = w.write_run(a);
      FixtureRunSpec b;  // the same config, every duration 1.25x shorter
      b.name = "zero1-fast";
      b.zero_stage = 1;
      b.speed = 1.25;
      b_ = w.write_run(b);
    }
    db_ = std::make_unique<Database>(path);
    ASSERT_TRUE(db_->is_open()) << db_->error();
    da_ = *db_->load_run(a_.run_id);
    db2_ = *db_->load_run(b_.run_id);
  }
  test::TempDir dir_;
  FixtureRun a_, b_;
  std::unique_ptr<Database> db_;
  RunData da_, db2_;
};

TEST_F(RunModels, OverviewCurvesSkippedStepsAndMemory) {
  const RunOverview o = build_run_overview(da_.profile);
  ASSERT_EQ(o.steps, 10);
  ASSERT_EQ(o.loss.y.size(), 10u);
  EXPECT_EQ(o.skipped_steps, std::vector<int64_t>{3});
  EXPECT_TRUE(std::isnan(o.loss.y[2]));  // the overflowed step has no loss
  EXPECT_DOUBLE_EQ(*o.final_loss, a_.steps.back().loss);
  EXPECT_TRUE(o.last_loss_finite);
  // A run that ended on NaN (diverged) says so; its last finite loss is kept.
  profiler::RunProfile ended_on_nan = da_.profile;
  ended_on_nan.steps.back().loss = std::nan("");
  const RunOverview d = build_run_overview(ended_on_nan);
  EXPECT_FALSE(d.last_loss_finite);
  EXPECT_DOUBLE_EQ(*d.final_loss, a_.steps[a_.steps.size() - 2].loss);
  // The loss scale halves at the overflow.
  EXPECT_EQ(o.loss_scale.y[1], 65536);
  EXPECT_EQ(o.loss_scale.y[2], 32768);
  std::vector<double> ms, tok;
  for (const auto& s : a_.steps) {
    ms.push_back(s.step_ms);
    if (!s.skipped) tok.push_back(s.tokens_per_s);
  }
  EXPECT_DOUBLE_EQ(o.median_step_ms, median_of(ms));
  EXPECT_DOUBLE_EQ(o.median_tokens_per_s, median_of(tok));
  // Memory: the largest rank per category; rank 1 peaks higher on activations and grads.
  ASSERT_EQ(o.memory.size(), 5u);
  const auto act = std::find_if(o.memory.begin(), o.memory.end(),
                                [](auto& m) { return m.category == "activations"; });
  ASSERT_NE(act, o.memory.end());
  EXPECT_EQ(act->peak_rank, 1);
  EXPECT_EQ(act->peak_bytes - *act->predicted_bytes, 65536u);
  uint64_t peak_sum = 0;
  for (const auto& m : o.memory) peak_sum += m.peak_bytes;
  EXPECT_EQ(o.peak_total_bytes, peak_sum);
  EXPECT_FALSE(o.predicted_total_bytes.has_value());  // "comm" has no prediction
}

TEST_F(RunModels, CollectivesTableAndExposedAgainstTotal) {
  const CommSummary s = build_comm_summary(da_.profile);
  // ZeRO 1 reduces with all_reduce; the optimizer's all_gather; two profiled steps' rows
  // collapse into one row per (op, size) and rank (the fixture writes the same rows).
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(s.rows[0].op, "all_gather");
  EXPECT_EQ(s.rows[1].op, "all_reduce");
  EXPECT_EQ(s.rows[1].bytes, 2u * 1024 * 1024);
  EXPECT_EQ(s.rows[1].ranks, 2);
  for (const auto& r : s.rows) {
    EXPECT_LE(r.min_ms, r.latency_ms.min + 1e-12);
    EXPECT_GE(r.max_ms, r.latency_ms.max - 1e-12);
    EXPECT_NEAR(r.latency_ms.mean * r.calls, r.total_ms.mean, 1e-9);
  }
  // Per step: in flight and exposed, means over ranks from the fixture's books.
  ASSERT_EQ(s.steps.size(), 2u);
  for (const auto& step : s.steps) {
    const auto& ex = a_.expect.at(step.step);
    EXPECT_NEAR(step.comm_ms.mean, 0.5 * (ex[0].comm_ms + ex[1].comm_ms), 1e-9);
    double exposed = 0;
    for (const auto& r : ex) exposed += r.outside_ms + r.optimizer_exposed_ms + r.exposed_ms.at(0);
    EXPECT_NEAR(step.exposed_ms.mean, exposed / 2, 1e-9);
  }
  EXPECT_NEAR(s.hidden_fraction(), 1 - s.exposed_ms_per_step / s.comm_ms_per_step, 1e-12);
  EXPECT_GT(s.hidden_fraction(), 0.0);
  EXPECT_LT(s.hidden_fraction(), 1.0);

  std::vector<CommRow> rows = s.rows;
  sort_comm_rows(rows, CommColumn::bytes, false);
  EXPECT_EQ(rows[0].op, "all_reduce");  // 2 MiB before 1 MiB
  sort_comm_rows(rows, CommColumn::latency, true);
  EXPECT_LE(rows[0].latency_ms.mean, rows[1].latency_ms.mean);
  sort_comm_rows(rows, CommColumn::op, false);
  EXPECT_EQ(rows[0].op, "all_reduce");
}

TEST_F(RunModels, CompareGivesStepAndPerLayerDeltas) {
  const LayerBreakdown la = build_layer_breakdown(da_.profile, da_.events);
  const LayerBreakdown lb = build_layer_breakdown(db2_.profile, db2_.events);
  const RunComparison c = compare_runs(da_.profile, la, db2_.profile, lb);
  EXPECT_EQ(c.a_run, a_.run_id);
  EXPECT_EQ(c.b_run, b_.run_id);
  std::vector<double> ams, bms;
  for (const auto& s : a_.steps) ams.push_back(s.step_ms);
  for (const auto& s : b_.steps) bms.push_back(s.step_ms);
  EXPECT_DOUBLE_EQ(c.a_median_step_ms, median_of(ams));
  EXPECT_DOUBLE_EQ(c.b_median_step_ms, median_of(bms));
  EXPECT_DOUBLE_EQ(c.step_delta_ms(), median_of(bms) - median_of(ams));
  // B runs every duration 1.25x faster: its median step is a's / 1.25 (the
  // non-profiled steps are (30 + s mod 4) / speed), a speed-up of 1.25.
  EXPECT_NEAR(*c.speedup(), 1.25, 0.01);
  EXPECT_NEAR(*c.step_delta_fraction(), 1 / 1.25 - 1, 0.01);
  // Every row matched by name; each module's delta is B's time minus A's, about −20 %.
  ASSERT_EQ(c.rows.size(), la.rows.size());
  for (const auto& r : c.rows) {
    ASSERT_TRUE(r.a_ms && r.b_ms) << r.name;
    const LayerRow& ra = la.rows[size_t(la.find_name(r.name))];
    const LayerRow& rb = lb.rows[size_t(lb.find_name(r.name))];
    EXPECT_DOUBLE_EQ(r.delta_ms(), rb.total_ms.mean - ra.total_ms.mean) << r.name;
    if (ra.total_ms.mean > 0.1) {
      EXPECT_NEAR(*r.delta_fraction(), 1 / 1.25 - 1, 0.01) << r.name;
    }
  }
  // A row only one run has: an empty side, the delta against zero.
  LayerBreakdown lb_less = lb;
  lb_less.rows.erase(lb_less.rows.begin() + lb_less.find_name("exposed comm"));
  lb_less.top_rows.clear();
  for (size_t i = 0; i < lb_less.rows.size(); ++i)
    if (lb_less.rows[i].parent < 0) lb_less.top_rows.push_back(int(i));
  const RunComparison partial = compare_runs(da_.profile, la, db2_.profile, lb_less);
  const auto it = std::find_if(partial.rows.begin(), partial.rows.end(),
                               [](auto& r) { return r.kind == LayerRowKind::exposed_comm; });
  ASSERT_NE(it, partial.rows.end());
  EXPECT_FALSE(it->b_ms.has_value());
  EXPECT_DOUBLE_EQ(it->delta_ms(), -*it->a_ms);
  EXPECT_FALSE(it->delta_fraction().has_value());
}

}  // namespace
}  // namespace hybrid::gui
