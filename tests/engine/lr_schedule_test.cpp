// LR schedules against DeepSpeed's formulas (lr_schedules.py), written out
// independently here and evaluated in double precision. LrSchedule returns
// float, so comparisons allow a relative error of 1e-6 (float rounding ≈ 6e-8).
#include "engine/optim/lr_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <vector>

#include "engine/config/config.h"

namespace {

using hybrid::engine::LrSchedule;
using hybrid::engine::SchedulerConfig;

constexpr double kRelTol = 1e-6;

void expect_lr(const LrSchedule& s, int64_t step, double expected) {
  SCOPED_TRACE("step " + std::to_string(step));
  EXPECT_NEAR(s.lr(step), expected, kRelTol * std::fabs(expected) + 1e-12);
}

const std::vector<int64_t> kSteps = {-1,  0,   1,   2,   7,   49,  98,  99,
                                     100, 101, 150, 499, 500, 501, 2000};

SchedulerConfig warmup(const char* type, const char* warmup_type, int64_t warmup_steps) {
  SchedulerConfig c;
  c.type = type;
  c.warmup_type = warmup_type;
  c.warmup_num_steps = warmup_steps;
  c.warmup_min_lr = 1e-5f;
  c.warmup_max_lr = 3e-3f;
  c.total_num_steps = 500;
  return c;
}

TEST(LrSchedule, ConstantWithoutScheduler) {
  const LrSchedule s(SchedulerConfig{}, 2.5e-4f);
  for (int64_t step : kSteps) EXPECT_EQ(s.lr(step), 2.5e-4f);
}

TEST(LrSchedule, WarmupLrLogAndLinear) {
  for (const char* kind : {"log", "linear"}) {
    SCOPED_TRACE(kind);
    const auto cfg = warmup("WarmupLR", kind, 100);
    const LrSchedule s(cfg, 1.0f);
    const double lo = cfg.warmup_min_lr, hi = cfg.warmup_max_lr, w = 100;
    for (int64_t step : kSteps) {
      double gamma = 1.0;
      if (step < 0)
        gamma = 0.0;  // before the first scheduler step: min lr
      else if (step < w)
        gamma = std::string(kind) == "log" ? std::log(step + 1.0) / std::log(w) : step / w;
      expect_lr(s, step, lo + (hi - lo) * gamma);
    }
  }
  // A hand-computed point: log warmup over 1000 steps at step 9 is log(10)/log(1000) = 1/3.
  SchedulerConfig c;
  c.type = "WarmupLR";
  c.warmup_min_lr = 0.0f;
  c.warmup_max_lr = 3e-3f;
  c.warmup_num_steps = 1000;
  EXPECT_NEAR(LrSchedule(c, 1.0f).lr(9), 1e-3, 1e-9);
  EXPECT_NEAR(LrSchedule(c, 1.0f).lr(999), 3e-3 * std::log(1000.0) / std::log(1000.0), 1e-9);
}

TEST(LrSchedule, WarmupLrDefaultsToTheOptimizerLr) {
  SchedulerConfig c;
  c.type = "WarmupLR";
  c.warmup_type = "linear";
  c.warmup_num_steps = 10;
  c.warmup_max_lr = 123.0f;  // ignored: the config said "use the optimizer's lr"
  c.warmup_max_lr_from_optimizer = true;
  const LrSchedule s(c, 6e-4f);
  expect_lr(s, 5, 6e-4 * 0.5);
  expect_lr(s, 10, 6e-4);
}

TEST(LrSchedule, WarmupNumStepsIsClampedToTwo) {
  // DeepSpeed: warmup_num_steps = max(2, warmup_num_steps), so log warmup never divides by log(1).
  auto c = warmup("WarmupLR", "log", 1);
  const LrSchedule s(c, 1.0f);
  const double lo = c.warmup_min_lr, hi = c.warmup_max_lr;
  expect_lr(s, 0, lo);
  expect_lr(s, 1, lo + (hi - lo) * std::log(2.0) / std::log(2.0));
  expect_lr(s, 2, hi);
}

TEST(LrSchedule, WarmupDecayLr) {
  for (const char* kind : {"log", "linear"}) {
    SCOPED_TRACE(kind);
    const auto cfg = warmup("WarmupDecayLR", kind, 100);
    const LrSchedule s(cfg, 1.0f);
    const double lo = cfg.warmup_min_lr, hi = cfg.warmup_max_lr, w = 100, total = 500;
    for (int64_t step : kSteps) {
      double gamma;
      if (step < 0)
        gamma = 0.0;
      else if (step < w)
        gamma = std::string(kind) == "log" ? std::log(step + 1.0) / std::log(w) : step / w;
      else
        gamma =
            std::max(0.0, (total - step) / std::max(1.0, total - w));  // linear decay to 0 at total
      expect_lr(s, step, lo + (hi - lo) * gamma);
    }
  }
  // Hand-computed: halfway through the decay (step 300 of 100..500) the lr is halfway down.
  const auto cfg = warmup("WarmupDecayLR", "linear", 100);
  EXPECT_NEAR(LrSchedule(cfg, 1.0f).lr(300), 1e-5 + (3e-3 - 1e-5) * 0.5, 1e-9);
  EXPECT_NEAR(LrSchedule(cfg, 1.0f).lr(800), 1e-5, 1e-9);  // decay clamps at 0: min lr
}

TEST(LrSchedule, WarmupCosineLr) {
  for (const char* kind : {"log", "linear"}) {
    SCOPED_TRACE(kind);
    SchedulerConfig c;
    c.type = "WarmupCosineLR";
    c.warmup_type = kind;
    c.warmup_num_steps = 100;
    c.total_num_steps = 500;
    c.warmup_min_ratio = 0.05f;
    c.cos_min_ratio = 0.1f;
    const double base = 4e-4, w = 100, total = 500;
    const LrSchedule s(c, float(base));
    for (int64_t step : kSteps) {
      double ratio;
      if (step < 0) {
        ratio = 0.0;  // DeepSpeed installs lr 0 until its first step()
      } else if (step < w) {
        const double f = std::string(kind) == "log" ? std::log(step + 1.0) / std::log(w) : step / w;
        ratio = c.warmup_min_ratio + f * (1.0 - c.warmup_min_ratio);
      } else {
        const double progress = std::min(1.0, (step - w + 1) / (total - w));
        ratio = c.cos_min_ratio +
                (1.0 - c.cos_min_ratio) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
      }
      expect_lr(s, step, base * ratio);
    }
  }
}

TEST(LrSchedule, UpdateNumberingFollowsDeepSpeed) {
  // The n-th applied update uses the lr after n scheduler steps: lr(n - 1).
  const LrSchedule s(warmup("WarmupLR", "linear", 10), 1.0f);
  for (int64_t n = 0; n < 20; ++n) EXPECT_EQ(s.lr_for_update(n), s.lr(n - 1));
  EXPECT_EQ(s.lr_for_update(0), 1e-5f);  // warmup_min_lr
}

TEST(LrSchedule, BuiltFromParsedConfig) {
  const auto cfg = hybrid::engine::parse_config(nlohmann::json::parse(R"({
    "train_micro_batch_size_per_gpu": 1,
    "optimizer": {"type": "AdamW", "params": {"lr": 0.01}},
    "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 40, "warmup_num_steps": 10,
                                                       "warmup_type": "linear"}}})"));
  const LrSchedule s(cfg.scheduler, cfg.optimizer.lr);
  expect_lr(s, 5, 0.01 * 0.5);    // warmup_min_ratio 0: linear from 0 to 1
  expect_lr(s, 40, 0.01 * 1e-4);  // the cosine floor, DeepSpeed's default ratio
  const double mid = (1.0 + std::cos(std::numbers::pi * 15.0 / 30.0)) / 2.0;  // step 24: 15 of 30
  expect_lr(s, 24, 0.01 * (1e-4 + (1.0 - 1e-4) * mid));
}

TEST(LrSchedule, RejectsImpossibleSettings) {
  SchedulerConfig c;
  c.type = "OneCycle";
  c.cycle_first_step_size = 0;
  EXPECT_THROW(LrSchedule(c, 1.0f), std::invalid_argument);
  c = SchedulerConfig{};
  c.type = "LRRangeTest";
  c.lr_range_test_step_size = 0;
  EXPECT_THROW(LrSchedule(c, 1.0f), std::invalid_argument);
  c.type = "Cyclic";
  EXPECT_THROW(LrSchedule(c, 1.0f), std::invalid_argument);
  c = warmup("WarmupLR", "log", 0);
  EXPECT_THROW(LrSchedule(c, 1.0f), std::invalid_argument);
  c = warmup("WarmupLR", "cosine", 10);
  EXPECT_THROW(LrSchedule(c, 1.0f), std::invalid_argument);
  c = warmup("WarmupDecayLR", "log", 10);
  c.total_num_steps = 0;
  EXPECT_THROW(LrSchedule(c, 1.0f), std::invalid_argument);
  const LrSchedule ok(warmup("WarmupLR", "log", 10), 1.0f);
  EXPECT_THROW(ok.lr(-2), std::invalid_argument);
}

}  // namespace
