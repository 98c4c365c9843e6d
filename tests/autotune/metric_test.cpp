// Metric direction: latency is lower-is-better (the best trial is the fastest),
// the others higher-is-better; names, units and conversions.
#include "autotune/metric.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "autotune/tune_error.h"

namespace hybrid::autotune {
namespace {

TEST(Metric, DirectionAndBetter) {
  EXPECT_FALSE(higher_is_better(Metric::latency));
  EXPECT_TRUE(higher_is_better(Metric::throughput));
  EXPECT_TRUE(higher_is_better(Metric::flops));
  EXPECT_TRUE(higher_is_better(Metric::tokens));
  EXPECT_TRUE(better(Metric::latency, 10.0, 12.0));  // 10 ms beats 12 ms
  EXPECT_FALSE(better(Metric::latency, 12.0, 10.0));
  EXPECT_TRUE(better(Metric::throughput, 12.0, 10.0));
  EXPECT_FALSE(better(Metric::throughput, 10.0, 10.0));  // strictly
}

TEST(Metric, NamesParseAndRoundTrip) {
  for (Metric m : {Metric::throughput, Metric::tokens, Metric::latency, Metric::flops}) {
    EXPECT_EQ(parse_metric(metric_name(m)), m);
    EXPECT_EQ(parse_metric(metric_column(m)), m);
  }
  EXPECT_EQ(metric_column(Metric::throughput), "samples_per_s");
  EXPECT_EQ(metric_column(Metric::latency), "latency_ms");
  EXPECT_THROW(parse_metric("speed"), TuneError);
  EXPECT_THAT(format_metric(Metric::latency, 12.34), ::testing::HasSubstr("12.3 ms"));
  EXPECT_THAT(format_metric(Metric::flops, 2.5e9), ::testing::HasSubstr("2.50 GFLOP/s"));
}

TEST(Metric, ValuesFromMeasurementsAndStepTimes) {
  Measurement x{20.0, 50.0, 3200.0, 1e9, {}};
  EXPECT_EQ(metric_value(Metric::latency, x), 20.0);
  EXPECT_EQ(metric_value(Metric::throughput, x), 50.0);
  EXPECT_EQ(metric_value(Metric::tokens, x), 3200.0);
  EXPECT_EQ(metric_value(Metric::flops, x), 1e9);
  // A 20 ms step of 1 sample and 64 tokens and 2e7 FLOPs.
  EXPECT_DOUBLE_EQ(metric_from_step_time(Metric::throughput, 0.02, 1, 64, 2e7), 50.0);
  EXPECT_DOUBLE_EQ(metric_from_step_time(Metric::tokens, 0.02, 1, 64, 2e7), 3200.0);
  EXPECT_DOUBLE_EQ(metric_from_step_time(Metric::latency, 0.02, 1, 64, 2e7), 20.0);
  EXPECT_DOUBLE_EQ(metric_from_step_time(Metric::flops, 0.02, 1, 64, 2e7), 1e9);
}

}  // namespace
}  // namespace hybrid::autotune
