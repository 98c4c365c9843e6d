// The optimizer interface: it updates fp32 master weights over one flat range
// (this rank's ZeRO partition, or a chunk of it), so any optimizer is
// partitioned for free. Users may pass their own, as DeepSpeed accepts a client
// optimizer.
//
// Optimizers whose update depends on whole parameter tensors (Lamb's trust
// ratio ||w|| / ||update||) take two passes, because ZeRO cuts tensors across
// ranks and the offloaded optimizer cuts the range into chunks. The callers
// (ZeroRuntime, OptimizerOffload) run this protocol:
//   stats = stats_size() zeros
//   gather_stats(part) for every part of this rank's range, in order
//   stats = Σ over ranks (when ranks own different ranges; the same bits everywhere)
//   step(part) with args.stats = stats, for every part
// One-pass optimizers (stats_size() == 0) only see step().
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/config/config.h"
#include "kernels/ops.h"

namespace hybrid::engine {

struct OptimizerStepArgs {
  float lr = 0.0f;
  int64_t step = 1;  // 1-based count of applied (not skipped) steps
  // Betas scheduled by OneCycle's cycle_momentum; negative: the optimizer's own.
  float beta1 = -1.0f, beta2 = -1.0f;
  int64_t first = 0;  // flat index, in the model's parameter space, of element 0 of this call
  kernels::DType grad_dtype = kernels::DType::f32;
  // Reduced, accumulated gradients (loss-scaled, summed over ranks). Null in the
  // second pass of a two-pass optimizer, which reads none.
  const void* grad = nullptr;
  float grad_scale = 1.0f;  // multiply grad by this: unscale, average and clip in one factor
  float* master = nullptr;  // fp32 weights being updated
  float* state = nullptr;   // state_floats_per_param() × n floats, zero at the start
  kernels::DType param_dtype = kernels::DType::f32;
  void* param_out = nullptr;  // when non-null, write the updated weights here in param_dtype
  size_t n = 0;
  const double* stats = nullptr;  // second pass: the statistics summed over every part and rank
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual std::string name() const = 0;
  virtual int state_floats_per_param() const = 0;
  // Doubles of whole-tensor statistics gathered in a first pass; 0: one pass.
  virtual size_t stats_size() const { return 0; }
  // First pass over one part: updates the state and adds the part's share of the
  // statistics into `stats` (stats_size() of them).
  virtual void gather_stats(kernels::Backend& backend, const OptimizerStepArgs& args,
                            double* stats) {
    (void)backend, (void)args, (void)stats;
  }
  virtual void step(kernels::Backend& backend, const OptimizerStepArgs& args) = 0;

  // Whether the engine reduces the gradients over the data-parallel ranks for
  // applied step `step` (1-based). An optimizer that exchanges its own state
  // instead (1-bit Adam once its variance is frozen) says false: its step then
  // receives each rank's local gradients (grad_scale unscales without averaging).
  virtual bool reduces_gradients(int64_t step) const {
    (void)step;
    return true;
  }
  // After a checkpoint's state was loaded: drops what checkpoints do not keep
  // (1-bit Adam's compression errors, as DeepSpeed resets them).
  virtual void state_loaded() {}
  // What the optimizer keeps besides its per-parameter state (1-bit LAMB's
  // frozen per-tensor coefficients), saved in a checkpoint's meta.json as
  // "optimizer_scalars"; null: nothing. The same on every rank.
  virtual nlohmann::json scalar_state() const { return nullptr; }
  // After state_loaded: the checkpoint's scalar_state (null when it has none).
  virtual void load_scalar_state(const nlohmann::json& scalars) { (void)scalars; }
};

// Flat ranges [begin, end) of the parameter space whose gradients are always
// zero (the padded vocabulary's rows): 1-bit compression cannot represent an
// exact zero, so their momentum is masked.
using ZeroGradientRanges = std::vector<std::pair<int64_t, int64_t>>;

// Adam / AdamW (DeepSpeed's "Adam" with adam_w_mode, or "AdamW").
std::unique_ptr<Optimizer> make_adam(const OptimizerConfig& cfg);
// torch.optim.SGD with momentum, dampening, weight decay and nesterov.
std::unique_ptr<Optimizer> make_sgd(const OptimizerConfig& cfg);
// DeepSpeed's FusedLamb. tensor_starts: the flat offset of every parameter
// tensor in increasing order, then the parameter count; the trust ratio is
// computed per tensor (the padding ZeRO adds past the count is a segment of its
// own, left unchanged).
std::unique_ptr<Optimizer> make_lamb(const OptimizerConfig& cfg,
                                     std::vector<int64_t> tensor_starts);
// DeepSpeed's OneBitAdam: its momentum averaged over `data_parallel` through
// the 1-bit compressed all-reduce, tensor by tensor (tensor_starts as for
// make_lamb); the momentum of `masked` kept at zero.
std::unique_ptr<Optimizer> make_onebit_adam(const OptimizerConfig& cfg,
                                            std::vector<int64_t> tensor_starts,
                                            comm::Communicator& data_parallel,
                                            ZeroGradientRanges masked);
// DeepSpeed's ZeroOneAdam (0/1 Adam): the variance updated at growing
// intervals, the gradients between them and, once the variance freezes, the
// accumulated local updates averaged through the 1-bit compressed all-reduce
// (arguments as for make_onebit_adam).
std::unique_ptr<Optimizer> make_zero_one_adam(const OptimizerConfig& cfg,
                                              std::vector<int64_t> tensor_starts,
                                              comm::Communicator& data_parallel,
                                              ZeroGradientRanges masked);
// DeepSpeed's OnebitLamb: LAMB, then its frozen per-tensor coefficients scaled
// by a bounded factor while the momentum of all tensors is averaged over
// `data_parallel` by the 1-bit compressed all-reduce as one flat buffer; the
// momentum of `masked` kept at zero. Each step covers every parameter (stage 0).
std::unique_ptr<Optimizer> make_onebit_lamb(const OptimizerConfig& cfg,
                                            std::vector<int64_t> tensor_starts,
                                            comm::Communicator& data_parallel,
                                            ZeroGradientRanges masked);
// The optimizer cfg.type names (tensor_starts as for make_lamb; data_parallel
// and masked for the 1-bit ones).
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& cfg,
                                          std::vector<int64_t> tensor_starts,
                                          comm::Communicator* data_parallel = nullptr,
                                          ZeroGradientRanges masked = {});
// State floats per parameter of the optimizer cfg names (the memory model's figure).
int optimizer_state_floats(const OptimizerConfig& cfg);
// What Adam and Lamb step with: the configured moments, OneCycle's scheduled
// betas replacing the configured ones when given.
kernels::MomentParams moment_params(const OptimizerConfig& cfg, const OptimizerStepArgs& a);

}  // namespace hybrid::engine
