// Which optimizer a config names, and how much state it keeps per parameter.
#include "engine/optim/optimizer.h"

namespace hybrid::engine {

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& cfg,
                                          std::vector<int64_t> tensor_starts) {
  if (cfg.type == "Lamb") return make_lamb(cfg, std::move(tensor_starts));
  if (cfg.type == "SGD") return make_sgd(cfg);
  return make_adam(cfg);
}

int optimizer_state_floats(const OptimizerConfig& cfg) {
  if (cfg.type == "SGD") return cfg.momentum != 0.0f ? 1 : 0;
  return 2;  // Adam, AdamW, Lamb: m and v
}

}  // namespace hybrid::engine
