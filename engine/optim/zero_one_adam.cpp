// DeepSpeed's ZeroOneAdam (deepspeed/runtime/fp16/onebit/zoadam.py, the 0/1
// Adam paper arXiv:2202.06009), step by step, F = max(var_freeze_step + 1, 2):
//   step 1         its initialization step: updates nothing;
//   steps 2..F     the variance phase, Adam without bias correction,
//                  p −= lr·(m/(√v + eps) + wd·p). At a variance step (step %
//                  var_interval == 0) the engine reduces the gradients and m, v
//                  take their average; at the others the gradients are not
//                  reduced (reduces_gradients) and m takes their 1-bit compressed
//                  average, v stays. var_interval starts at 1 and doubles after
//                  every var_update_scaler variance steps. DeepSpeed freezes
//                  after the step that passes var_freeze_step, so step F is
//                  still a variance-phase step.
//   steps after F  v frozen, local steps: each rank's m takes its local
//                  gradient, p −= lr·u with u = m/(√v + eps) + wd·p, and the
//                  accumulator a −= lr·u. At a synchronisation (step %
//                  local_interval == 0) the local updates are undone (p −= a),
//                  a·(√v + eps) is averaged compressed, m = −a/Σlr (the lrs of
//                  the local steps since the last one) and p += a/(√v + eps);
//                  a = 0. local_interval starts at 1 and doubles, up to
//                  local_step_clipper, after every local_step_scaler frozen steps.
// One set of compression errors serves both phases, zeroed when the variance
// freezes (DeepSpeed: they measure another quantity from then on). The masked
// ranges of each compressed average are 0 (exp_avg_mask). A loaded checkpoint
// drops what DeepSpeed's load_state_dict drops: the errors, the accumulator
// (zeroed at the next step) and the schedule counters, which start again at
// the next step; the step count and F stay. The accumulator is state (3 floats
// a parameter, as DeepSpeed keeps it per parameter). Unlike DeepSpeed, on one
// rank the variance phase's non-variance steps use the gradient (DeepSpeed
// leaves m unchanged there, its update sitting in the `size > 1` branch).
#include <algorithm>
#include <vector>

#include "engine/optim/optimizer.h"
#include "engine/optim/tensorwise_compressed_average.h"

namespace hybrid::engine {

namespace {

// DeepSpeed's per-parameter schedule counters (equal for every parameter: all
// step together), as they stand at the start of a step.
struct ZeroOneSchedule {
  int64_t var_interval = 1, var_counter = 0;
  int64_t local_interval = 1, local_counter = 0;
};

class ZeroOneAdam final : public Optimizer, public TracksCompressionErrors {
 public:
  ZeroOneAdam(const OptimizerConfig& cfg, std::vector<int64_t> tensor_starts,
              comm::Communicator& comm, ZeroGradientRanges masked)
      : cfg_(cfg), average_(std::move(tensor_starts), comm, std::move(masked)) {}

  std::string name() const override { return "ZeroOneAdam"; }
  int state_floats_per_param() const override { return 3; }  // m, v, the accumulator
  bool reduces_gradients(int64_t step) const override {
    return step == 1 || (!frozen(step) && step % schedule_at(step).var_interval == 0);
  }
  void state_loaded() override { reload_pending_ = true; }
  void track_errors_in(TrackingAllocator& alloc) override { average_.track_errors_in(alloc); }

  // Every pass is the backend's op, on its memory: host or device alike.
  void step(kernels::Backend& backend, const OptimizerStepArgs& a) override {
    begin(backend, a);
    if (a.step == 1) return;  // DeepSpeed's initialization step
    if (!frozen(a.step) && a.step % schedule_.var_interval == 0) {
      kernels::MomentParams p = moment_params(cfg_, a);
      p.bias_correction = false;
      backend.adamw({p, /*adam_w_mode=*/true}, a.master, a.state, a.state + a.n, a.grad_dtype,
                    a.grad, a.grad_scale, a.param_dtype, a.param_out, a.n);
      return;
    }
    if (frozen(a.step))
      local_step(backend, a);
    else
      compressed_gradient_step(backend, a);
  }

 private:
  int64_t last_variance_step() const { return std::max<int64_t>(cfg_.var_freeze_step + 1, 2); }
  bool frozen(int64_t step) const { return step > last_variance_step(); }

  // DeepSpeed's bookkeeping at the end of `step` (step 1 does none).
  ZeroOneSchedule after(ZeroOneSchedule s, int64_t step) const {
    if (!frozen(step)) {
      if (step % s.var_interval == 0 && ++s.var_counter == cfg_.var_update_scaler)
        s.var_counter = 0, s.var_interval *= 2;
    } else if (++s.local_counter == cfg_.local_step_scaler) {
      s.local_counter = 0;
      s.local_interval = std::min(cfg_.local_step_clipper, s.local_interval * 2);
    }
    return s;
  }
  ZeroOneSchedule schedule_at(int64_t step) const {
    if (reload_pending_) return {};
    ZeroOneSchedule s = schedule_;
    for (int64_t t = schedule_step_; t < step; ++t) s = after(s, t);
    return s;
  }

  // The schedule of step a.step; what a load or the freeze resets.
  void begin(kernels::Backend& backend, const OptimizerStepArgs& a) {
    if (reload_pending_) {
      reload_pending_ = false;
      schedule_ = {}, schedule_step_ = a.step, lr_sum_ = 0.0;
      average_.reset_errors();
      backend.zero(accumulator(a), a.n * sizeof(float));
    } else if (a.step > schedule_step_) {
      schedule_ = schedule_at(a.step), schedule_step_ = a.step;
    }
    if (a.step == last_variance_step() + 1) average_.reset_errors();
  }
  static float* accumulator(const OptimizerStepArgs& a) { return a.state + 2 * a.n; }

  // The gradients' compressed average takes the momentum. The accumulator,
  // zero until the variance freezes, holds them meanwhile (and is zeroed again).
  void compressed_gradient_step(kernels::Backend& backend, const OptimizerStepArgs& a) {
    const kernels::MomentParams mp = moment_params(cfg_, a);
    float* g = accumulator(a);
    backend.convert(kernels::DType::f32, g, a.grad_dtype, a.grad, a.n);
    if (a.grad_scale != 1.0f) backend.scale(kernels::DType::f32, g, a.n, a.grad_scale);
    average_.average(backend, g, a.first, a.n);
    backend.momentum_update(mp.beta1, a.state, kernels::DType::f32, g, 1.0f, a.n);
    backend.frozen_variance_step(mp, a.master, a.state, a.state + a.n, nullptr, a.param_dtype,
                                 a.param_out, a.n);
    backend.zero(g, a.n * sizeof(float));
  }

  void local_step(kernels::Backend& backend, const OptimizerStepArgs& a) {
    const kernels::MomentParams mp = moment_params(cfg_, a);
    float *m = a.state, *v = a.state + a.n, *acc = accumulator(a);
    lr_sum_ += double(mp.lr);
    const bool sync = a.step % schedule_.local_interval == 0;
    backend.momentum_update(mp.beta1, m, a.grad_dtype, a.grad, a.grad_scale, a.n);
    backend.frozen_variance_step(mp, a.master, m, v, acc, a.param_dtype,
                                 sync ? nullptr : a.param_out, a.n);
    if (!sync) return;
    // The synchronisation: the local updates undone, their average applied.
    backend.zero_one_sync_begin(a.master, acc, v, mp.eps, a.n);
    average_.average(backend, acc, a.first, a.n);
    backend.zero_one_sync_end(a.master, m, acc, v, mp.eps, float(lr_sum_), a.param_dtype,
                              a.param_out, a.n);
    lr_sum_ = 0.0;
  }

  OptimizerConfig cfg_;
  TensorwiseCompressedAverage average_;
  ZeroOneSchedule schedule_;     // valid at the start of step schedule_step_
  int64_t schedule_step_ = 2;    // step 1 books nothing
  double lr_sum_ = 0.0;          // DeepSpeed's lrs: the lrs of the local steps since the last sync
  bool reload_pending_ = false;  // a checkpoint loaded: reset at the next step
};

}  // namespace

std::unique_ptr<Optimizer> make_zero_one_adam(const OptimizerConfig& cfg,
                                              std::vector<int64_t> tensor_starts,
                                              comm::Communicator& data_parallel,
                                              ZeroGradientRanges masked) {
  return std::make_unique<ZeroOneAdam>(cfg, std::move(tensor_starts), data_parallel,
                                       std::move(masked));
}

}  // namespace hybrid::engine
