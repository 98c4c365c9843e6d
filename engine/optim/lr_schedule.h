// Learning-rate schedules with DeepSpeed's formulas (deepspeed/runtime/lr_schedules.py):
// WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle, LRRangeTest; no scheduler
// means a constant lr. OneCycle with cycle_momentum also schedules the betas.
//
// Step convention (DeepSpeed's last_batch_iteration): lr(-1) is the lr the
// scheduler installs at construction, which the first optimizer update uses;
// each applied update is followed by scheduler.step(), so update number n
// (0-based, counting applied updates only — DeepSpeed does not step the
// scheduler on an fp16 overflow skip) uses lr(n - 1). lr_for_update(n) says so.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "engine/config/config.h"

namespace hybrid::engine {

class LrSchedule {
 public:
  // base_lr: the optimizer's lr (WarmupCosineLR scales it; WarmupLR warms up to
  // it when cfg.warmup_max_lr_from_optimizer; the constant schedule returns it).
  // Throws std::invalid_argument for an unknown type or impossible parameters.
  LrSchedule(const SchedulerConfig& cfg, float base_lr);

  // The lr at DeepSpeed's last_batch_iteration == step (step >= -1).
  float lr(int64_t step) const;
  // The lr used by the n-th applied optimizer update (n = 0, 1, ...).
  float lr_for_update(int64_t n) const { return lr(n - 1); }

  // OneCycle with cycle_momentum: the (beta1, beta2) DeepSpeed installs at
  // last_batch_iteration == step — beta1 cycles inversely to the lr, beta2 is
  // 0.99. nullopt: the optimizer keeps its own betas.
  std::optional<std::pair<float, float>> betas(int64_t step) const;
  std::optional<std::pair<float, float>> betas_for_update(int64_t n) const { return betas(n - 1); }
  bool schedules_betas() const { return cfg_.type == "OneCycle" && cfg_.cycle_momentum; }

  const std::string& type() const { return cfg_.type; }  // "" for constant
  float base_lr() const { return base_lr_; }

 private:
  double warmup_fraction(int64_t step) const;  // 0..1 during warmup, by warmup_type
  float warmup_lr(int64_t step) const;         // WarmupLR, WarmupDecayLR
  float warmup_cosine_lr(int64_t step) const;
  double one_cycle_scale(int64_t step) const;  // 0 → 1 → 0 over the cycle
  float one_cycle_lr(int64_t step) const;
  float lr_range_test_lr(int64_t step) const;
  int64_t cycle_second() const {
    return cfg_.cycle_second_step_size > 0 ? cfg_.cycle_second_step_size
                                           : cfg_.cycle_first_step_size;
  }
  int64_t cycle_total() const { return cfg_.cycle_first_step_size + cycle_second(); }

  SchedulerConfig cfg_;
  float base_lr_;
  int64_t warmup_steps_;  // max(2, warmup_num_steps), as DeepSpeed clamps it
  double min_lr_ = 0.0, max_lr_ = 0.0;
};

}  // namespace hybrid::engine
