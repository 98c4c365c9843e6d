#include "engine/precision/loss_scaler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace hybrid::engine {

LossScaler::LossScaler(const Fp16Config& cfg) {
  if (cfg.loss_scale > 0.0f) {
    cur_scale_ = cfg.loss_scale;
    return;
  }
  dynamic_ = true;
  cur_scale_ = std::ldexp(1.0, cfg.initial_scale_power);
  scale_window_ = cfg.loss_scale_window;
  min_scale_ = cfg.min_loss_scale;
  delayed_shift_ = cfg.hysteresis;
  cur_hysteresis_ = cfg.hysteresis;
  consecutive_hysteresis_ = cfg.consecutive_hysteresis;
}

void LossScaler::update(bool overflow) {
  if (!dynamic_) {
    ++cur_iter_;
    return;
  }
  if (overflow) {
    if (delayed_shift_ == 1 || cur_hysteresis_ == 1) {
      if (cur_scale_ == min_scale_)
        throw LossScaleAtMinimumError(
            fmt::format("fp16: gradient overflow with the loss scale already at its minimum ({}); "
                        "cannot decrease it further (raise fp16.min_loss_scale or use bf16)",
                        min_scale_));
      cur_scale_ = std::max(cur_scale_ / scale_factor_, min_scale_);
    } else {
      --cur_hysteresis_;
    }
    last_overflow_iter_ = cur_iter_;
  } else {
    if (consecutive_hysteresis_) cur_hysteresis_ = delayed_shift_;
    if ((cur_iter_ - last_overflow_iter_) % scale_window_ == 0) {
      if (!consecutive_hysteresis_) cur_hysteresis_ = delayed_shift_;
      cur_scale_ *= scale_factor_;
    }
  }
  ++cur_iter_;
}

nlohmann::json LossScaler::state() const {
  return {{"dynamic", dynamic_},
          {"cur_scale", cur_scale_},
          {"cur_hysteresis", cur_hysteresis_},
          {"cur_iter", cur_iter_},
          {"last_overflow_iter", last_overflow_iter_}};
}

void LossScaler::load_state(const nlohmann::json& s) {
  cur_scale_ = s.at("cur_scale").get<double>();
  cur_hysteresis_ = s.at("cur_hysteresis").get<int>();
  cur_iter_ = s.at("cur_iter").get<int64_t>();
  last_overflow_iter_ = s.at("last_overflow_iter").get<int64_t>();
}

}  // namespace hybrid::engine
