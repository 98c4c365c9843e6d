// The sweep tables of the data layer: a trial's typed config (precision the way
// DeepSpeed reads it, ZeRO, batch and bucket knobs), the metric registry (unit and
// direction), and the leaderboard that ranks trials by them.
#include <gtest/gtest.h>

#include "profiler/tables/metric_registry.h"
#include "profiler/tables/sweep_leaderboard.h"
#include "profiler/tables/trial_config.h"
#include "tests/common/trial_knobs.h"

namespace hybrid::profiler {
namespace {

TEST(TrialConfig, PrecisionAsDeepSpeedReadsIt) {
  EXPECT_EQ(parse_trial_config(R"({"bf16": {"enabled": true}})").precision, Precision::bf16);
  EXPECT_EQ(parse_trial_config(R"({"bfloat16": {"enabled": true}})").precision, Precision::bf16);
  // "bf16" wins over the older spelling, as in DeepSpeed.
  EXPECT_EQ(parse_trial_config(R"({"bf16": {"enabled": false}, "bfloat16": {"enabled": true}})")
                .precision,
            Precision::fp32);
  EXPECT_EQ(parse_trial_config(R"({"fp16": {"enabled": true}})").precision, Precision::fp16);
  EXPECT_EQ(parse_trial_config(R"({"fp16": {"enabled": false}})").precision, Precision::fp32);
  EXPECT_EQ(parse_trial_config("{}").precision, Precision::fp32);  // DeepSpeed's default
  EXPECT_EQ(parse_trial_config("{not json").precision, Precision::unknown);
  EXPECT_EQ(parse_trial_config("[1]").dtype(), "");
  EXPECT_EQ(parse_trial_config(R"({"bfloat16": {"enabled": true}})").dtype(), "bf16");
}

TEST(TrialConfig, KnobsWithTypes) {
  const TrialConfig c = parse_trial_config(R"({
    "train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 4,
    "zero_optimization": {"stage": 3, "reduce_bucket_size": 5e8, "allgather_bucket_size": 2e8,
                          "overlap_comm": true, "offload_optimizer": {"device": "cpu"}}})");
  hybrid::test::expect_trial_knobs(c, 8, 4, 3);
  EXPECT_EQ(c.offload_optimizer, "cpu");
  EXPECT_FALSE(c.offload_param.has_value());
  // Wrong types stay unknown; the deprecated boolean means stage 1.
  const TrialConfig bad = parse_trial_config(
      R"({"train_micro_batch_size_per_gpu": 2.5, "zero_optimization": {"stage": "two",
          "overlap_comm": "yes"}})");
  EXPECT_FALSE(bad.micro_batch.has_value());
  EXPECT_FALSE(bad.zero_stage.has_value());
  EXPECT_FALSE(bad.overlap_comm.has_value());
  EXPECT_EQ(parse_trial_config(R"({"zero_optimization": true})").zero_stage, 1);
  EXPECT_EQ(parse_trial_config(R"({"zero_optimization": false})").zero_stage, 0);
}

TEST(MetricRegistry, UnitsAndDirections) {
  for (const char* name : {"tokens_per_s", "samples_per_s", "flops_per_s", "throughput"}) {
    EXPECT_TRUE(metric_info(name).higher_is_better()) << name;
    EXPECT_TRUE(metric_info(name).known) << name;
  }
  EXPECT_EQ(metric_info("tokens_per_s").unit, "tokens/s");
  EXPECT_EQ(metric_info("flops_per_s").unit, "FLOP/s");
  const MetricInfo latency = metric_info("latency_ms");
  EXPECT_FALSE(latency.higher_is_better());
  EXPECT_EQ(latency.unit, "ms");
  EXPECT_TRUE(latency.better(20, 30));
  EXPECT_FALSE(metric_info("latency").higher_is_better());
  EXPECT_FALSE(metric_info("p99_step_ms").higher_is_better());  // any *_ms is a time
  EXPECT_EQ(metric_info("p99_step_ms").unit, "ms");
  EXPECT_FALSE(metric_info("peak_mem_bytes").higher_is_better());
  EXPECT_EQ(metric_info("images_per_s").unit, "images/s");
  EXPECT_FALSE(metric_info("score").known);
  EXPECT_TRUE(metric_info("score").higher_is_better());
  EXPECT_EQ(to_string(MetricDirection::lower_is_better), "lower is better");
}

TrialRow trial(int64_t id, TrialStatus status, std::optional<double> metric) {
  TrialRow t;
  t.id = id;
  t.status = status;
  t.metric = metric;
  t.config_json = R"({"bfloat16": {"enabled": true}, "train_micro_batch_size_per_gpu": 2})";
  return t;
}

TEST(SweepLeaderboard, RanksByTheMetricsDirection) {
  SweepInfo s;
  s.metric = "latency_ms";
  const std::vector<TrialRow> trials = {
      trial(1, TrialStatus::ok, 30), trial(2, TrialStatus::oom, std::nullopt),
      trial(3, TrialStatus::ok, 20), trial(4, TrialStatus::ok, 25),
      trial(5, TrialStatus::failed, 1)};
  const SweepLeaderboard b = build_sweep_leaderboard(s, trials, {});
  EXPECT_FALSE(b.metric.higher_is_better());
  EXPECT_EQ(b.ranking, (std::vector<int>{2, 3, 0}));
  EXPECT_EQ(b.best, 2);
  EXPECT_EQ(b.count(TrialStatus::ok), 3);
  EXPECT_EQ(b.rows[0].config.precision, Precision::bf16);
  s.metric = "tokens_per_s";
  EXPECT_EQ(build_sweep_leaderboard(s, trials, {}).ranking, (std::vector<int>{0, 3, 2}));
  EXPECT_EQ(build_sweep_leaderboard(s, {}, {}).best, -1);
}

// The interval the leaderboards show: the median step time's 95 % interval in the
// metric's units. A time is itself; a rate is work per step over the time, so
// 50 samples/s at 20 ms/step over [18, 25] ms is [40, 55.6] samples/s.
TEST(SweepLeaderboard, IntervalsInTheMetricsUnits) {
  TrialRow t;
  t.key = "mbs=1";
  t.status = TrialStatus::ok;
  t.latency_ms = 20.0;
  t.spread = StepSpread{13, 20.0, 19.0, 21.0, 1.0, 0.05, 18.0, 25.0};
  t.metric = 50.0;
  const auto rate = trial_metric_interval(metric_info("samples_per_s"), t);
  ASSERT_TRUE(rate);
  EXPECT_DOUBLE_EQ(rate->lo, 50.0 * 20.0 / 25.0);
  EXPECT_DOUBLE_EQ(rate->hi, 50.0 * 20.0 / 18.0);
  t.metric = 20.0;
  const auto time = trial_metric_interval(metric_info("latency_ms"), t);
  ASSERT_TRUE(time);
  EXPECT_EQ(*time, (MetricRange{18.0, 25.0}));
  // Rows carry it; a trial without a spread (an older store's) has none.
  TrialRow old = t;
  old.key = "mbs=2";
  old.spread.reset();
  SweepInfo sweep;
  sweep.metric = "latency_ms";
  const auto board = build_sweep_leaderboard(sweep, {t, old}, {});
  EXPECT_EQ(board.rows[0].interval, time);
  EXPECT_FALSE(board.rows[1].interval);
}

}  // namespace
}  // namespace hybrid::profiler
