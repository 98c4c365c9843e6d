// fp16 loss scaling with DeepSpeed's semantics, step for step:
// - dynamic (fp16.loss_scale == 0): start at 2^initial_scale_power; on overflow,
//   spend one unit of hysteresis, and once it is spent (or hysteresis == 1) halve
//   the scale (not below min_loss_scale; overflow at the minimum is an error, as
//   DeepSpeed raises); after loss_scale_window clean iterations since the last
//   overflow, double it and restore hysteresis (consecutive_hysteresis restores
//   hysteresis on every clean iteration instead);
// - static (loss_scale > 0): the scale never changes.
// Either way an overflowing step is skipped by the engine.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "engine/config/config.h"

namespace hybrid::engine {

class LossScaleAtMinimumError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class LossScaler {
 public:
  LossScaler() = default;  // scale 1, static: bf16 / fp32
  explicit LossScaler(const Fp16Config& cfg);

  float scale() const { return cur_scale_; }
  bool dynamic() const { return dynamic_; }
  int hysteresis_left() const { return cur_hysteresis_; }
  int64_t iteration() const { return cur_iter_; }

  // Called once per optimizer step with whether any rank saw inf/NaN.
  void update(bool overflow);

  nlohmann::json state() const;
  void load_state(const nlohmann::json& s);

 private:
  bool dynamic_ = false;
  double cur_scale_ = 1.0;
  double scale_factor_ = 2.0;
  int64_t scale_window_ = 1000;
  double min_scale_ = 1.0;
  int delayed_shift_ = 1;
  int cur_hysteresis_ = 1;
  bool consecutive_hysteresis_ = false;
  int64_t cur_iter_ = 0;
  int64_t last_overflow_iter_ = -1;
};

}  // namespace hybrid::engine
