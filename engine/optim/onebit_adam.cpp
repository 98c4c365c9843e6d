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
// DeepSpeed's load_state_dict does. Every step runs as backend ops, so the
// same code runs on host and device memory.
#include <algorithm>
#include <vector>

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

  // Every pass is the backend's op, on its memory: host or device alike.
  void compressed_step(kernels::Backend& backend, const OptimizerStepArgs& a) {
    const kernels::MomentParams mp = moment_params(cfg_, a);
    float* m = a.state;
    backend.momentum_update(mp.beta1, m, a.grad_dtype, a.grad, a.grad_scale, a.n);
    average_.average(backend, m, a.first, a.n);
    backend.frozen_variance_step(mp, a.master, m, a.state + a.n, /*accumulator=*/nullptr,
                                 a.param_dtype, a.param_out, a.n);
  }

  OptimizerConfig cfg_;
  TensorwiseCompressedAverage average_;  // the momentum's, tensor by tensor
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
