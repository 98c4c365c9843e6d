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
//                   (tensorwise_compressed_average.h); the masked ranges'
//                   momentum is set to 0 after it, as DeepSpeed's exp_avg_mask.
// The compression errors are not checkpointed: state_loaded drops them, as
// DeepSpeed's load_state_dict does. The compressed phase runs on host buffers
// (the CPU backend; the engine refuses others).
#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/optim/host_step.h"
#include "engine/optim/optimizer.h"
#include "engine/optim/tensorwise_compressed_average.h"

namespace hybrid::engine {

namespace {

class OneBitAdam final : public Optimizer, public TracksCompressionErrors {
 public:
  OneBitAdam(const OptimizerConfig& cfg, std::vector<int64_t> tensor_starts,
             comm::Communicator& comm, ZeroGradientRanges masked)
      : cfg_(cfg), average_(std::move(tensor_starts), comm, std::move(masked)) {}

  std::string name() const override { return "OneBitAdam"; }
  int state_floats_per_param() const override { return 2; }  // m, v
  bool reduces_gradients(int64_t step) const override { return !compressing(step); }
  void state_loaded() override { average_.reset_errors(); }
  void track_errors_in(TrackingAllocator& alloc) override { average_.track_errors_in(alloc); }

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
    const std::vector<float>& g = scaled_gradient(backend, a, gradient_);
    const float* gv = g.data();
#pragma omp parallel for simd
    for (size_t i = 0; i < a.n; ++i) m[i] = mp.beta1 * m[i] + (1.0f - mp.beta1) * gv[i];
    average_.average(m, a.first, a.n);
#pragma omp parallel for simd
    for (size_t i = 0; i < a.n; ++i) {
      const float p = a.master[i];
      const float update = m[i] / (std::sqrt(v[i]) + mp.eps) + mp.weight_decay * p;
      a.master[i] = p - mp.lr * update;
    }
    write_working_params(backend, a);
  }

  OptimizerConfig cfg_;
  TensorwiseCompressedAverage average_;  // the momentum's, tensor by tensor
  std::vector<float> gradient_;          // scaled_gradient's, reused
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
