// What the 1-bit optimizers' host-side steps share: the gradient in fp32 with
// grad_scale applied, and the updated weights written to the working copy.
#pragma once

#include <vector>

#include "engine/optim/optimizer.h"

namespace hybrid::engine {

// Fills g (its capacity kept from step to step: a fresh vector of n floats
// each step page-faulted half a gigabyte for GPT-2 124M) and returns it.
inline std::vector<float>& scaled_gradient(kernels::Backend& backend, const OptimizerStepArgs& a,
                                           std::vector<float>& g) {
  g.resize(a.n);
  backend.convert(kernels::DType::f32, g.data(), a.grad_dtype, a.grad, a.n);
  for (float& x : g) x *= a.grad_scale;
  return g;
}
// The master weights into param_out (param_dtype), when the caller wants them there.
inline void write_working_params(kernels::Backend& backend, const OptimizerStepArgs& a) {
  if (a.param_out) backend.convert(a.param_dtype, a.param_out, kernels::DType::f32, a.master, a.n);
}

}  // namespace hybrid::engine
