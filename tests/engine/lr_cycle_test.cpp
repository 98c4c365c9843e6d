// OneCycle and LRRangeTest against closed forms written out here (DeepSpeed's
// lr_schedules.py, current release), over every step of a cycle and well into
// the decay. LrSchedule returns float: relative error 1e-6.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "engine/config/config.h"
#include "engine/optim/lr_schedule.h"

namespace {

using hybrid::engine::LrSchedule;
using hybrid::engine::SchedulerConfig;

void expect_near_rel(double got, double want, const std::string& what) {
  EXPECT_NEAR(got, want, 1e-6 * std::fabs(want) + 1e-12) << what;
}

// First half 10 steps up, second half 15 down (batch index b = step + 1):
// scale = b / 10 for b <= 10, (25 - b) / 15 after; then decay.
SchedulerConfig one_cycle() {
  SchedulerConfig c;
  c.type = "OneCycle";
  c.cycle_min_lr = 1e-4f;
  c.cycle_max_lr = 1e-2f;
  c.cycle_first_step_size = 10;
  c.cycle_second_step_size = 15;
  c.decay_step_size = 4;
  c.decay_lr_rate = 0.5f;
  c.cycle_min_mom = 0.85f;
  c.cycle_max_mom = 0.95f;
  c.decay_mom_rate = 0.01f;
  return c;
}

double triangle(int64_t step) {
  const double b = double(step + 1);
  return b <= 10 ? b / 10 : (25 - b) / 15;
}

TEST(OneCycle, LrRisesFallsThenDecays) {
  const auto c = one_cycle();
  const LrSchedule s(c, 123.0f);  // the optimizer's lr plays no part
  const double lo = 1e-4, hi = 1e-2;
  for (int64_t step = -1; step < 60; ++step) {
    double want;
    if (step < 25)
      want = lo + (hi - lo) * triangle(step);
    else  // lr = min / (1 + rate · (step − 25 + 1) / decay_step_size)
      want = lo / (1.0 + 0.5 * double(step - 24) / 4.0);
    expect_near_rel(s.lr(step), want, "step " + std::to_string(step));
  }
  // Landmarks: the construction value, the peak after the first half, the last cycle step.
  EXPECT_FLOAT_EQ(s.lr(-1), 1e-4f);
  EXPECT_FLOAT_EQ(s.lr(9), 1e-2f);
  expect_near_rel(s.lr(23), lo + (hi - lo) / 15, "second-to-last cycle step");
  EXPECT_FLOAT_EQ(s.lr_for_update(0), 1e-4f);
}

TEST(OneCycle, MomentumCyclesInverselyAndBeta2IsPinned) {
  const auto c = one_cycle();
  const LrSchedule s(c, 1.0f);
  ASSERT_TRUE(s.schedules_betas());
  // DeepSpeed installs (cycle_min_mom, 0.99) at construction.
  EXPECT_FLOAT_EQ(s.betas(-1)->first, 0.85f);
  for (int64_t step = 0; step < 60; ++step) {
    const auto b = s.betas(step);
    ASSERT_TRUE(b.has_value());
    EXPECT_FLOAT_EQ(b->second, 0.99f);
    const double want = step < 25 ? 0.95 - (0.95 - 0.85) * triangle(step)
                                  : 0.95 * (1.0 + 0.01 * double(step - 24) / 4.0);
    expect_near_rel(b->first, want, "step " + std::to_string(step));
  }
  EXPECT_FLOAT_EQ(s.betas_for_update(10)->first, 0.85f) << "the lowest momentum at the lr peak";
}

TEST(OneCycle, DefaultsSymmetricCycleNoDecayNoMomentum) {
  SchedulerConfig c;
  c.type = "OneCycle";
  c.cycle_min_lr = 0.0f;
  c.cycle_max_lr = 1.0f;
  c.cycle_first_step_size = 20;  // second half defaults to the first
  c.cycle_momentum = false;
  const LrSchedule s(c, 1.0f);
  EXPECT_FALSE(s.schedules_betas());
  EXPECT_FALSE(s.betas(5).has_value());
  for (int64_t step = -1; step < 40; ++step) {
    const double b = double(step + 1);
    expect_near_rel(s.lr(step), b <= 20 ? b / 20 : (40 - b) / 20, std::to_string(step));
  }
  // decay_step_size 0: no decay, the lr stays at cycle_min_lr after the cycle.
  for (int64_t step = 40; step < 100; step += 7) EXPECT_EQ(s.lr(step), 0.0f);
}

TEST(LrRangeTest, ContinuousAndStaircase) {
  SchedulerConfig c;
  c.type = "LRRangeTest";
  c.lr_range_test_min_lr = 1e-5f;
  c.lr_range_test_step_size = 7;
  c.lr_range_test_step_rate = 2.0f;
  for (bool stairs : {false, true}) {
    c.lr_range_test_staircase = stairs;
    const LrSchedule s(c, 1.0f);
    for (int64_t step = -1; step < 50; ++step) {
      double interval = double(step + 1) / 7.0;
      if (stairs) interval = std::floor(interval);
      expect_near_rel(s.lr(step), 1e-5 * (1.0 + 2.0 * interval),
                      (stairs ? "staircase, step " : "step ") + std::to_string(step));
    }
    EXPECT_FLOAT_EQ(s.lr_for_update(0), 1e-5f) << "the first update uses the minimum";
  }
  c.lr_range_test_staircase = true;
  const LrSchedule stairs(c, 1.0f);
  EXPECT_EQ(stairs.lr(0), stairs.lr(5)) << "flat within a stair";
  EXPECT_GT(stairs.lr(6), stairs.lr(5)) << "the next stair starts at step 6 (batch 7)";
}

TEST(LrRangeTest, BuiltFromParsedConfig) {
  const auto cfg = hybrid::engine::parse_config(nlohmann::json::parse(R"({
    "train_micro_batch_size_per_gpu": 1,
    "scheduler": {"type": "LRRangeTest", "params": {"lr_range_test_min_lr": 0.001,
        "lr_range_test_step_size": 10, "lr_range_test_step_rate": 5, "lr_range_test_staircase": true}}})"));
  const LrSchedule s(cfg.scheduler, cfg.optimizer.lr);
  expect_near_rel(s.lr(8), 1e-3, "step 8");
  expect_near_rel(s.lr(9), 1e-3 * 6, "step 9: batch 10, the second stair");
  expect_near_rel(s.lr(29), 1e-3 * 16, "step 29");
}

}  // namespace
