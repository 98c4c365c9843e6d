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
    kernels::AdamWParams p;
    p.lr = a.lr;
    p.beta1 = a.beta1 >= 0.0f ? a.beta1 : cfg_.beta1;
    p.beta2 = a.beta2 >= 0.0f ? a.beta2 : cfg_.beta2;
    p.eps = cfg_.eps;
    p.weight_decay = cfg_.weight_decay;
    p.decoupled_weight_decay = cfg_.adam_w_mode;
    p.bias_correction = cfg_.bias_correction;
    p.step = a.step;
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
