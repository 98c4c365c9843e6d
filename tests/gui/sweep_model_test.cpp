// The sweeps window's model over a real run store: config columns read from the
// trials' ds_configs, the best trial, the scatter, pruned candidates, and the
// leaderboard's sort orders and filters.
#include "gui/model/sweep_model.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "gui/model/database.h"
#include "tests/common/trial_knobs.h"
#include "tests/gui/view_test_util.h"

namespace hybrid::gui {
namespace {

using profiler::TrialStatus;

TEST(SweepModel, ParsesTheKnobsOfADsConfig) {
  const TrialConfig c = parse_trial_config(test::trial_config(8, 3, 4));
  hybrid::test::expect_trial_knobs(c, 8, 4, 3);
  EXPECT_EQ(c.dtype(), "bf16");
  const TrialConfig fp16 =
      parse_trial_config(R"({"fp16": {"enabled": true}, "train_micro_batch_size_per_gpu": 2})");
  EXPECT_EQ(fp16.dtype(), "fp16");
  EXPECT_FALSE(fp16.zero_stage.has_value());
  EXPECT_EQ(parse_trial_config(R"({"train_micro_batch_size_per_gpu": 2})").dtype(), "fp32");
  // Not JSON, or the wrong types: nothing, and no exception.
  const TrialConfig bad = parse_trial_config("{not json");
  EXPECT_FALSE(bad.micro_batch.has_value());
  EXPECT_EQ(bad.dtype(), "");
  EXPECT_FALSE(
      parse_trial_config(R"({"zero_optimization": {"stage": "two"}})").zero_stage.has_value());
}

class SweepModelDb : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = std::make_unique<Database>(fx_.path);
    ASSERT_TRUE(db_->is_open()) << db_->error();
    ASSERT_EQ(db_->sweeps().size(), 1u);
    const auto& sweep = db_->sweeps()[0];
    table_ = build_sweep_table(sweep, db_->trials(sweep.id), db_->pruned(sweep.id));
  }
  test::FixtureDb fx_;
  std::unique_ptr<Database> db_;
  SweepTable table_;
};

TEST_F(SweepModelDb, LeaderboardRowsBestAndScatter) {
  const auto& trials = fx_.sweep.trials;
  ASSERT_EQ(table_.rows.size(), trials.size());
  EXPECT_TRUE(table_.metric.higher_is_better());  // tokens_per_s
  // The best ok trial, found independently.
  int64_t best_id = -1;
  double best = -1;
  for (const auto& t : trials)
    if (t.status == TrialStatus::ok && *t.metric > best) {
      best = *t.metric;
      best_id = t.id;
    }
  ASSERT_GE(table_.best, 0);
  EXPECT_EQ(table_.rows[size_t(table_.best)].trial.id, best_id);
  EXPECT_EQ(table_.count(TrialStatus::ok), 4);
  EXPECT_EQ(table_.count(TrialStatus::oom), 1);
  EXPECT_EQ(table_.count(TrialStatus::timeout), 1);
  // One dot per ok trial, at its micro batch, coloured by its stage.
  ASSERT_EQ(table_.scatter.size(), 4u);
  for (const auto& p : table_.scatter) {
    const auto& r = table_.rows[size_t(p.row)];
    EXPECT_EQ(p.micro_batch, double(*r.config.micro_batch));
    EXPECT_EQ(p.metric, *r.trial.metric);
    EXPECT_EQ(p.zero_stage, *r.config.zero_stage);
  }
  // The failures keep their reasons; pruned candidates their predicted memory.
  const auto oom = std::find_if(table_.rows.begin(), table_.rows.end(),
                                [](auto& r) { return r.trial.status == TrialStatus::oom; });
  EXPECT_NE(oom->trial.reason.find("out of memory"), std::string::npos);
  ASSERT_EQ(table_.pruned.size(), 2u);
  EXPECT_EQ(table_.pruned[0].predicted_mem_bytes, 5ull << 30);
  EXPECT_EQ(table_.pruned_config[1].micro_batch, 32);
}

TEST_F(SweepModelDb, SortsByAnyColumnWithMissingValuesLast) {
  const auto by_metric = sweep_display_order(table_, SweepColumn::metric, false);
  ASSERT_EQ(by_metric.size(), 6u);
  for (size_t i = 1; i < 4; ++i)
    EXPECT_GE(*table_.rows[size_t(by_metric[i - 1])].trial.metric,
              *table_.rows[size_t(by_metric[i])].trial.metric);
  EXPECT_EQ(by_metric[0], table_.best);
  for (size_t i = 4; i < 6; ++i)
    EXPECT_FALSE(table_.rows[size_t(by_metric[i])].trial.metric.has_value());
  const auto metric_up = sweep_display_order(table_, SweepColumn::metric, true);
  EXPECT_EQ(metric_up[3], table_.best);  // largest last among the measured
  EXPECT_FALSE(table_.rows[size_t(metric_up[5])].trial.metric.has_value());

  const auto by_mb = sweep_display_order(table_, SweepColumn::micro_batch, true);
  std::vector<int> mbs;
  for (int i : by_mb) mbs.push_back(*table_.rows[size_t(i)].config.micro_batch);
  EXPECT_EQ(mbs, (std::vector<int>{2, 4, 4, 8, 8, 16}));
  // Ties keep the store's order (trial ids ascending).
  EXPECT_LT(table_.rows[size_t(by_mb[1])].trial.id, table_.rows[size_t(by_mb[2])].trial.id);

  const auto by_stage = sweep_display_order(table_, SweepColumn::zero_stage, false);
  EXPECT_EQ(*table_.rows[size_t(by_stage.front())].config.zero_stage, 2);
  EXPECT_EQ(*table_.rows[size_t(by_stage.back())].config.zero_stage, 1);

  const auto by_reason = sweep_display_order(table_, SweepColumn::reason, true);
  for (size_t i = 1; i < by_reason.size(); ++i)
    EXPECT_LE(table_.rows[size_t(by_reason[i - 1])].trial.reason,
              table_.rows[size_t(by_reason[i])].trial.reason);
}

TEST_F(SweepModelDb, Filters) {
  const auto oom = sweep_display_order(table_, SweepColumn::id, true, {"OOM", false});
  ASSERT_EQ(oom.size(), 1u);
  EXPECT_EQ(table_.rows[size_t(oom[0])].trial.status, TrialStatus::oom);
  const auto zero1 = sweep_display_order(table_, SweepColumn::id, true, {"zero=1", false});
  EXPECT_EQ(zero1.size(), 3u);  // mb 2, mb 4, and the OOM at mb 8
  const auto measured = sweep_display_order(table_, SweepColumn::id, true, {"", true});
  EXPECT_EQ(measured.size(), 4u);
  const auto both = sweep_display_order(table_, SweepColumn::id, true, {"zero=1", true});
  EXPECT_EQ(both.size(), 2u);
  EXPECT_TRUE(sweep_display_order(table_, SweepColumn::id, true, {"no such trial", false}).empty());
}

TEST(SweepModel, LatencyMetricsAreMinimised) {
  profiler::SweepInfo s;
  s.metric = "latency_ms";
  std::vector<profiler::TrialRow> trials(3);
  const double metrics[] = {30, 20, 25};
  for (size_t i = 0; i < 3; ++i) {
    trials[i].id = int64_t(i + 1);
    trials[i].status = TrialStatus::ok;
    trials[i].metric = metrics[i];
    trials[i].config_json = test::trial_config(int(i + 1), 2);
  }
  const SweepTable t = build_sweep_table(s, trials, {});
  EXPECT_FALSE(t.metric.higher_is_better());
  EXPECT_EQ(t.best, 1);
}

}  // namespace
}  // namespace hybrid::gui
