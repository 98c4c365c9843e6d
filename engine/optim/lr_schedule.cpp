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
  if (!t.empty() && t != "WarmupLR" && t != "WarmupDecayLR" && t != "WarmupCosineLR")
    throw std::invalid_argument(fmt::format(
        "lr_schedule: unknown scheduler type \"{}\" (supported: WarmupLR, WarmupDecayLR, "
        "WarmupCosineLR, or none)",
        t));
  if (t.empty()) return;
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
  if (t == "WarmupCosineLR") {
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
  if (step < 0) return float(min_lr_);
  double gamma;
  if (step < warmup_steps_) {
    gamma = warmup_fraction(step);
  } else if (t == "WarmupLR") {
    gamma = 1.0;
  } else {
    const double remaining = double(cfg_.total_num_steps - step);
    const double span = std::max(1.0, double(cfg_.total_num_steps - warmup_steps_));
    gamma = std::max(0.0, remaining / span);
  }
  return float(min_lr_ + (max_lr_ - min_lr_) * gamma);
}

}  // namespace hybrid::engine
