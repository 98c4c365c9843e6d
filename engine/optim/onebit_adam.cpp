// DeepSpeed's OnebitAdam (deepspeed/runtime/fp16/onebit/adam.py), step by step:
//   step 1          its initialization step: counts, updates nothing (DeepSpeed
//                   allocates its buffers there and leaves the parameters);
//   steps 2..F      Adam without bias correction on the averaged gradients, the
//                   weight decay added to the update: p −= lr·(m/(√v + eps) + wd·p)
//                   (F = max(freeze_step, 2): DeepSpeed freezes after the step
//                   that reaches freeze_step, never during step 1);
//   steps after F   v frozen; the gradients are not reduced (reduces_gradients),
//                   each rank's momentum takes its local gradient and is then
//                   averaged over the ranks by the 1-bit compressed all-reduce,
//                   tensor by tensor, with error feedback
//                   (engine/comm/compressed_all_reduce.h); the masked ranges'
//                   momentum is set to 0 after it, as DeepSpeed's exp_avg_mask.
// The compression errors are not checkpointed: state_loaded drops them, as
// DeepSpeed's load_state_dict does. The compressed phase runs on host buffers
// (the CPU backend; the engine refuses others).
#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/comm/compressed_all_reduce.h"
#include "engine/optim/optimizer.h"

namespace hybrid::engine {

namespace {

class OneBitAdam final : public Optimizer {
 public:
  OneBitAdam(const OptimizerConfig& cfg, std::vector<int64_t> tensor_starts,
             comm::Communicator& comm, ZeroGradientRanges masked)
      : cfg_(cfg), starts_(std::move(tensor_starts)), comm_(comm), masked_(std::move(masked)) {}

  std::string name() const override { return "OneBitAdam"; }
  int state_floats_per_param() const override { return 2; }  // m, v
  bool reduces_gradients(int64_t step) const override { return !compressing(step); }
  void state_loaded() override { errors_.clear(); }

  void step(kernels::Backend& backend, const OptimizerStepArgs& a) override {
    if (a.step == 1) return;  // DeepSpeed's initialization step
    if (!compressing(a.step)) {
      kernels::MomentParams p = moment_params(cfg_, a);
      p.bias_correction = false;
      backend.adamw({p, /*adam_w_mode=*/true}, a.master, a.state, a.state + a.n, a.grad_dtype,
                    a.grad, a.grad_scale, a.param_dtype, a.param_out, a.n);
      return;
    }
    compressed_step(backend, a);
  }

 private:
  bool compressing(int64_t step) const { return step > std::max<int64_t>(cfg_.freeze_step, 2); }

  void compressed_step(kernels::Backend& backend, const OptimizerStepArgs& a) {
    const kernels::MomentParams mp = moment_params(cfg_, a);
    float* m = a.state;
    const float* v = a.state + a.n;
    std::vector<float> g(a.n);
    backend.convert(kernels::DType::f32, g.data(), a.grad_dtype, a.grad, a.n);
    for (size_t i = 0; i < a.n; ++i)
      m[i] = mp.beta1 * m[i] + (1.0f - mp.beta1) * (g[i] * a.grad_scale);
    average_momentum(m, a.first, a.n);
    for (size_t i = 0; i < a.n; ++i) {
      const float p = a.master[i];
      const float update = m[i] / (std::sqrt(v[i]) + mp.eps) + mp.weight_decay * p;
      a.master[i] = p - mp.lr * update;
    }
    if (a.param_out)
      backend.convert(a.param_dtype, a.param_out, kernels::DType::f32, a.master, a.n);
  }

  // The momentum of [first, first + n) averaged over the ranks, tensor by
  // tensor; the masked ranges and the padding past the last tensor set to 0.
  void average_momentum(float* m, int64_t first, size_t n) {
    const int64_t last = first + int64_t(n);
    const size_t tensors = starts_.size() - 1;
    const int world = comm_.world_size();
    if (world > 1) {
      if (errors_.empty())  // the first compressed step, or the first after a load
        for (size_t t = 0; t < tensors; ++t)
          errors_.emplace_back(size_t(std::max<int64_t>(0, std::min(starts_[t + 1], last) -
                                                               std::max(starts_[t], first))),
                               world);
      for (size_t t = 0; t < tensors; ++t) {
        const int64_t b = std::max(starts_[t], first), e = std::min(starts_[t + 1], last);
        if (b < e) comm::compressed_all_reduce(comm_, m + (b - first), size_t(e - b), errors_[t]);
      }
    }
    const auto zero = [&](int64_t b, int64_t e) {
      b = std::max(b, first), e = std::min(e, last);
      if (b < e) std::fill(m + (b - first), m + (e - first), 0.0f);
    };
    for (const auto& [b, e] : masked_) zero(b, e);
    zero(starts_.back(), last);
  }

  OptimizerConfig cfg_;
  std::vector<int64_t> starts_;
  comm::Communicator& comm_;
  ZeroGradientRanges masked_;
  std::vector<comm::CompressionErrors>
      errors_;  // one per tensor, made at the first compressed step
};

}  // namespace

std::unique_ptr<Optimizer> make_onebit_adam(const OptimizerConfig& cfg,
                                            std::vector<int64_t> tensor_starts,
                                            comm::Communicator& data_parallel,
                                            ZeroGradientRanges masked) {
  return std::make_unique<OneBitAdam>(cfg, std::move(tensor_starts), data_parallel,
                                      std::move(masked));
}

}  // namespace hybrid::engine
