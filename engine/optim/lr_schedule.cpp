#include "engine/optim/lr_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

namespace hybrid::engine {

LrSchedule::LrSchedule(const SchedulerConfig& cfg, float base_lr)
    : cfg_(cfg), base_lr_(base_lr), warmup_steps_(std::max<int64_t>(2, cfg.warmup_num_steps)) {
  const std::string& t = cfg_.type;
  if (!t.empty() && t != "WarmupLR" && t != "WarmupDecayLR" && t != "WarmupCosineLR" &&
      t != "OneCycle" && t != "LRRangeTest")
    throw std::invalid_argument(fmt::format(
        "lr_schedule: unknown scheduler type \"{}\" (supported: WarmupLR, WarmupDecayLR, "
        "WarmupCosineLR, OneCycle, LRRangeTest, or none)",
        t));
  if (t.empty()) return;
  if (t == "OneCycle") {
    if (cfg_.cycle_first_step_size <= 0 || cfg_.cycle_second_step_size < 0 ||
        cfg_.decay_step_size < 0)
      throw std::invalid_argument(fmt::format(
          "lr_schedule: OneCycle needs cycle_first_step_size > 0, cycle_second_step_size >= 0 "
          "and decay_step_size >= 0, got {}, {}, {}",
          cfg_.cycle_first_step_size, cfg_.cycle_second_step_size, cfg_.decay_step_size));
    return;
  }
  if (t == "LRRangeTest") {
    if (cfg_.lr_range_test_step_size <= 0)
      throw std::invalid_argument(
          fmt::format("lr_schedule: lr_range_test_step_size must be > 0, got {}",
                      cfg_.lr_range_test_step_size));
    return;
  }
  if (cfg_.warmup_num_steps <= 0)
    throw std::invalid_argument(fmt::format(
        "lr_schedule: warmup_num_steps must be a positive integer, got {}", cfg_.warmup_num_steps));
  if (cfg_.warmup_type != "log" && cfg_.warmup_type != "linear")
    throw std::invalid_argument(fmt::format(
        "lr_schedule: warmup_type must be \"log\" or \"linear\", got \"{}\"", cfg_.warmup_type));
  if (t != "WarmupLR" && cfg_.total_num_steps <= 0)
    throw std::invalid_argument(
        fmt::format("lr_schedule: {} needs total_num_steps > 0, got {}", t, cfg_.total_num_steps));
  min_lr_ = cfg_.warmup_min_lr;
  max_lr_ = (t == "WarmupLR" && cfg_.warmup_max_lr_from_optimizer) ? double(base_lr_)
                                                                   : double(cfg_.warmup_max_lr);
}

double LrSchedule::warmup_fraction(int64_t step) const {
  if (cfg_.warmup_type == "log")
    return std::log(double(step + 1)) / std::log(double(warmup_steps_));
  return double(step) / double(warmup_steps_);
}

float LrSchedule::lr(int64_t step) const {
  const std::string& t = cfg_.type;
  if (t.empty()) return base_lr_;
  if (step < -1)
    throw std::invalid_argument(fmt::format("lr_schedule: step must be >= -1, got {}", step));
  if (t == "WarmupCosineLR") return warmup_cosine_lr(step);
  if (t == "OneCycle") return one_cycle_lr(step);
  if (t == "LRRangeTest") return lr_range_test_lr(step);
  return warmup_lr(step);
}

float LrSchedule::warmup_cosine_lr(int64_t step) const {
  if (step < 0) return 0.0f;  // DeepSpeed installs lr 0 before its first step()
  double ratio;
  if (step < warmup_steps_) {
    ratio = cfg_.warmup_min_ratio + warmup_fraction(step) * (1.0 - cfg_.warmup_min_ratio);
  } else {
    // Progress is clamped so the lr stays at the floor past total_num_steps.
    const double done = double(step - warmup_steps_ + 1);
    const double span = double(std::max<int64_t>(1, cfg_.total_num_steps - warmup_steps_));
    const double progress = std::min(1.0, done / span);
    const double cosine = (1.0 + std::cos(std::numbers::pi * progress)) / 2.0;
    ratio = std::max(0.0, cfg_.cos_min_ratio + (1.0 - cfg_.cos_min_ratio) * cosine);
  }
  return float(double(base_lr_) * ratio);
}

// WarmupLR and WarmupDecayLR: min_lr + (max_lr - min_lr) * gamma.
float LrSchedule::warmup_lr(int64_t step) const {
  if (step < 0) return float(min_lr_);
  double gamma;
  if (step < warmup_steps_) {
    gamma = warmup_fraction(step);
  } else if (cfg_.type == "WarmupLR") {
    gamma = 1.0;
  } else {
    const double remaining = double(cfg_.total_num_steps - step);
    const double span = std::max(1.0, double(cfg_.total_num_steps - warmup_steps_));
    gamma = std::max(0.0, remaining / span);
  }
  return float(min_lr_ + (max_lr_ - min_lr_) * gamma);
}

// OneCycle: one triangle of cycle_first_step_size up and cycle_second_step_size
// down, indexed by batch = step + 1 (so step -1, the value installed at
// construction, is the cycle's start), then an optional decay.
double LrSchedule::one_cycle_scale(int64_t step) const {
  const double first = double(cfg_.cycle_first_step_size);
  const double total = first + double(cycle_second());
  const double ratio = first / total;
  const double batch = double(step + 1);
  const double cycle = std::floor(1.0 + batch / total);
  const double x = 1.0 + batch / total - cycle;
  return x <= ratio ? x / ratio : (x - 1.0) / (ratio - 1.0);
}

float LrSchedule::one_cycle_lr(int64_t step) const {
  const double lo = cfg_.cycle_min_lr, hi = cfg_.cycle_max_lr;
  if (step < cycle_total()) return float(lo + (hi - lo) * one_cycle_scale(step));
  if (cfg_.decay_step_size == 0 || cfg_.decay_lr_rate == 0.0f) return float(lo);
  const double interval = double(step - cycle_total() + 1) / double(cfg_.decay_step_size);
  return float(lo / (1.0 + double(cfg_.decay_lr_rate) * interval));
}

std::optional<std::pair<float, float>> LrSchedule::betas(int64_t step) const {
  if (!schedules_betas()) return std::nullopt;
  constexpr float kBeta2 = 0.99f;  // DeepSpeed's OneCycle sets betas = (momentum, 0.99)
  const double lo = cfg_.cycle_min_mom, hi = cfg_.cycle_max_mom;
  if (step < 0) return std::pair{float(lo), kBeta2};  // installed at construction
  if (step < cycle_total()) return std::pair{float(hi - (hi - lo) * one_cycle_scale(step)), kBeta2};
  if (cfg_.decay_step_size == 0 || cfg_.decay_mom_rate == 0.0f) return std::pair{float(hi), kBeta2};
  const double interval = double(step - cycle_total() + 1) / double(cfg_.decay_step_size);
  return std::pair{float(hi * (1.0 + double(cfg_.decay_mom_rate) * interval)), kBeta2};
}

// LRRangeTest: min_lr · (1 + rate · interval), interval = (step + 1) / step_size
// (floored with staircase).
float LrSchedule::lr_range_test_lr(int64_t step) const {
  double interval = double(step + 1) / double(cfg_.lr_range_test_step_size);
  if (cfg_.lr_range_test_staircase) interval = std::floor(interval);
  return float(double(cfg_.lr_range_test_min_lr) *
               (1.0 + double(cfg_.lr_range_test_step_rate) * interval));
}

}  // namespace hybrid::engine
