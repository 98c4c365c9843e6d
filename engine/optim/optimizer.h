// The optimizer interface: it updates fp32 master weights over one flat range
// (this rank's ZeRO partition), so any optimizer is partitioned for free. Users
// may pass their own, as DeepSpeed accepts a client optimizer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/config/config.h"
#include "kernels/ops.h"

namespace hybrid::engine {

struct OptimizerStepArgs {
  float lr = 0.0f;
  int64_t step = 1;  // 1-based count of applied (not skipped) steps
  kernels::DType grad_dtype = kernels::DType::f32;
  const void* grad = nullptr;  // reduced, accumulated gradients (loss-scaled, summed over ranks)
  float grad_scale = 1.0f;     // multiply grad by this: unscale, average and clip in one factor
  float* master = nullptr;     // fp32 weights being updated
  float* state = nullptr;      // state_floats_per_param() × n floats, zero at the start
  kernels::DType param_dtype = kernels::DType::f32;
  void* param_out = nullptr;  // when non-null, write the updated weights here in param_dtype
  size_t n = 0;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual std::string name() const = 0;
  virtual int state_floats_per_param() const = 0;
  virtual void step(kernels::Backend& backend, const OptimizerStepArgs& args) = 0;
};

// Adam / AdamW (DeepSpeed's "Adam" with adam_w_mode, or "AdamW").
std::unique_ptr<Optimizer> make_adam(const OptimizerConfig& cfg);

}  // namespace hybrid::engine
