// Adam / AdamW through the backend's fused adamw op; OneCycle's scheduled betas
// replace the configured ones when given.
#include "engine/optim/optimizer.h"

namespace hybrid::engine {

namespace {

class Adam final : public Optimizer {
 public:
  explicit Adam(const OptimizerConfig& cfg) : cfg_(cfg) {}
  std::string name() const override { return cfg_.adam_w_mode ? "AdamW" : "Adam"; }
  int state_floats_per_param() const override { return 2; }  // m, v

  void step(kernels::Backend& backend, const OptimizerStepArgs& a) override {
    const kernels::AdamWParams p{moment_params(cfg_, a), cfg_.adam_w_mode};
    backend.adamw(p, a.master, a.state, a.state + a.n, a.grad_dtype, a.grad, a.grad_scale,
                  a.param_dtype, a.param_out, a.n);
  }

 private:
  OptimizerConfig cfg_;
};

}  // namespace

std::unique_ptr<Optimizer> make_adam(const OptimizerConfig& cfg) {
  return std::make_unique<Adam>(cfg);
}

}  // namespace hybrid::engine
