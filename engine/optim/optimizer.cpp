// Which optimizer a config names, how much state it keeps per parameter, and
// the step parameters the Adam-style ones share.
#include "engine/optim/optimizer.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace hybrid::engine {

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& cfg,
                                          std::vector<int64_t> tensor_starts,
                                          comm::Communicator* data_parallel,
                                          ZeroGradientRanges masked) {
  if (cfg.type == "Lamb") return make_lamb(cfg, std::move(tensor_starts));
  if (cfg.onebit() && !data_parallel)
    throw std::invalid_argument("make_optimizer: " + cfg.type + " needs the data-parallel group");
  if (cfg.type == "OneBitAdam")
    return make_onebit_adam(cfg, std::move(tensor_starts), *data_parallel, std::move(masked));
  if (cfg.type == "ZeroOneAdam")
    return make_zero_one_adam(cfg, std::move(tensor_starts), *data_parallel, std::move(masked));
  if (cfg.type == "OneBitLamb")
    return make_onebit_lamb(cfg, std::move(tensor_starts), *data_parallel, std::move(masked));
  if (cfg.type == "SGD") return make_sgd(cfg);
  return make_adam(cfg);
}

int optimizer_state_floats(const OptimizerConfig& cfg) {
  if (cfg.type == "SGD") return cfg.momentum != 0.0f ? 1 : 0;
  // 0/1 Adam: m, v and the accumulated local updates; OneBitLamb: m, v and the
  // fresh variance of its compressed stage.
  if (cfg.type == "ZeroOneAdam" || cfg.type == "OneBitLamb") return 3;
  return 2;  // Adam, AdamW, Lamb, OneBitAdam: m and v
}

kernels::MomentParams moment_params(const OptimizerConfig& cfg, const OptimizerStepArgs& a) {
  kernels::MomentParams p;
  p.lr = a.lr;
  p.beta1 = a.beta1 >= 0.0f ? a.beta1 : cfg.beta1;
  p.beta2 = a.beta2 >= 0.0f ? a.beta2 : cfg.beta2;
  p.eps = cfg.eps;
  p.weight_decay = cfg.weight_decay;
  p.bias_correction = cfg.bias_correction;
  p.step = a.step;
  return p;
}

}  // namespace hybrid::engine
