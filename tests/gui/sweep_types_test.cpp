// Issue 12's done-when for the sweeps window, at the view-model level over a real
// run store: a trial whose config spells bfloat16 the older DeepSpeed way shows
// as bf16 (not fp32), and a latency metric is lower-is-better (its best trial is
// the fastest, the header says so, the metric column sorts fastest first).
#include <gtest/gtest.h>

#include <string>

#include "gui/model/database.h"
#include "gui/model/sweep_model.h"
#include "profiler/store/run_store.h"
#include "tests/gui/view_test_util.h"

namespace hybrid::gui {
namespace {

using profiler::TrialStatus;

profiler::TrialRow trial(int64_t sweep_id, std::string key, std::string config, double latency_ms) {
  profiler::TrialRow t;
  t.sweep_id = sweep_id;
  t.key = std::move(key);
  t.config_json = std::move(config);
  t.status = TrialStatus::ok;
  t.metric = latency_ms;
  t.latency_ms = latency_ms;
  return t;
}

// A latency sweep with a "bfloat16" trial, an fp16 trial and an fp32 one.
class SweepTypes : public ::testing::Test {
 protected:
  void SetUp() override {
    {
      profiler::RunStore store(path_);
      profiler::SweepInfo sweep;
      sweep.name = "latency sweep";
      sweep.strategy = "grid";
      sweep.metric = "latency_ms";
      const int64_t id = store.create_sweep(sweep);
      store.upsert_trial(trial(id, "bfloat16",
                               R"({"train_micro_batch_size_per_gpu": 4,
                                   "bfloat16": {"enabled": true}})",
                               30));
      store.upsert_trial(trial(id, "fp16",
                               R"({"train_micro_batch_size_per_gpu": 4,
                                   "fp16": {"enabled": true}})",
                               20));
      store.upsert_trial(trial(id, "fp32", R"({"train_micro_batch_size_per_gpu": 4})", 25));
    }
    db_ = std::make_unique<Database>(path_);
    ASSERT_TRUE(db_->is_open()) << db_->error();
    ASSERT_EQ(db_->sweeps().size(), 1u);
    const auto& sweep = db_->sweeps()[0];
    table_ = build_sweep_table(sweep, db_->trials(sweep.id), db_->pruned(sweep.id));
    ASSERT_EQ(table_.rows.size(), 3u);
  }
  int row_of(const std::string& key) const {
    for (size_t i = 0; i < table_.rows.size(); ++i)
      if (table_.rows[i].trial.key == key) return int(i);
    return -1;
  }

  test::TempDir dir_;
  std::filesystem::path path_ = dir_ / "hybrid.db";
  std::unique_ptr<Database> db_;
  SweepTable table_;
};

TEST_F(SweepTypes, ABfloat16TrialShowsAsBf16) {
  const SweepRow& r = table_.rows[size_t(row_of("bfloat16"))];
  EXPECT_EQ(r.config.precision, profiler::Precision::bf16);
  EXPECT_EQ(r.config.dtype(), "bf16");  // the dtype column's text
  EXPECT_EQ(table_.rows[size_t(row_of("fp16"))].config.dtype(), "fp16");
  EXPECT_EQ(table_.rows[size_t(row_of("fp32"))].config.dtype(), "fp32");
  // The filter and the dtype column see it too.
  const auto bf16 = sweep_display_order(table_, SweepColumn::id, true, {"bf16", false});
  EXPECT_EQ(bf16, (std::vector<int>{row_of("bfloat16")}));
  const auto by_dtype = sweep_display_order(table_, SweepColumn::dtype, true);
  EXPECT_EQ(by_dtype.front(), row_of("bfloat16"));
}

TEST_F(SweepTypes, ALatencyMetricIsLowerIsBetter) {
  EXPECT_FALSE(table_.metric.higher_is_better());
  EXPECT_EQ(table_.metric.unit, "ms");
  EXPECT_EQ(profiler::to_string(table_.metric.direction), "lower is better");  // the header
  EXPECT_EQ(table_.best, row_of("fp16"));                                      // the fastest trial
  EXPECT_EQ(table_.ranking, (std::vector<int>{row_of("fp16"), row_of("fp32"), row_of("bfloat16")}));
  // Sorting the metric column ascending (its first click for a lower-is-better
  // metric) lists the best first.
  const auto order = sweep_display_order(table_, SweepColumn::metric, true);
  EXPECT_EQ(order.front(), table_.best);
}

}  // namespace
}  // namespace hybrid::gui
