// torch.optim.SGD (what DeepSpeed builds for "SGD") through the backend's sgd op.
// The momentum buffer is its one state float (none without momentum); torch
// starts it from the first gradient, so the first applied step says so.
#include "engine/optim/optimizer.h"

namespace hybrid::engine {

namespace {

class Sgd final : public Optimizer {
 public:
  explicit Sgd(const OptimizerConfig& cfg) : cfg_(cfg) {}
  std::string name() const override { return cfg_.momentum != 0.0f ? "SGD (momentum)" : "SGD"; }
  int state_floats_per_param() const override { return cfg_.momentum != 0.0f ? 1 : 0; }

  void step(kernels::Backend& backend, const OptimizerStepArgs& a) override {
    kernels::SgdParams p;
    p.lr = a.lr;
    p.momentum = cfg_.momentum;
    p.dampening = cfg_.dampening;
    p.weight_decay = cfg_.weight_decay;
    p.nesterov = cfg_.nesterov;
    p.first_step = a.step == 1;  // torch starts the buffer from the first gradient
    backend.sgd(p, a.master, a.state, a.grad_dtype, a.grad, a.grad_scale, a.param_dtype,
                a.param_out, a.n);
  }

 private:
  OptimizerConfig cfg_;
};

}  // namespace

std::unique_ptr<Optimizer> make_sgd(const OptimizerConfig& cfg) {
  return std::make_unique<Sgd>(cfg);
}

}  // namespace hybrid::engine
