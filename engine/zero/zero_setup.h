// The ZeRO settings the runtime pieces share: the config's zero_optimization
// block as parsed, plus the dtypes that the rest of the config resolves.
#pragma once

#include <cstdint>

#include "engine/config/config.h"
#include "kernels/dtype.h"

namespace hybrid::engine {

struct ZeroSetup : ZeroConfig {
  kernels::DType param_dtype = kernels::DType::f32;  // parameters and working gradients
  kernels::DType accum_dtype = kernels::DType::f32;  // gradient accumulation
  AioConfig aio;                                     // NVMe offload's file I/O

  // offload_param moved this rank's partition of working parameters off the device.
  bool params_offloaded() const {
    return stage == 3 && offload_param.device != OffloadDevice::none;
  }

  // fp32 master weights are a separate buffer only when parameters are 16-bit.
  bool separate_master() const { return param_dtype != kernels::DType::f32; }
  // Stages 0/1 keep a full gradient buffer; its accumulator is separate when the
  // accumulation dtype differs from the working dtype.
  bool separate_accum() const { return param_dtype != accum_dtype; }
  // Gradients are averaged by all-reduce (each rank then keeps its partition of the
  // result): always at stage 0, at stages 1-2 when reduce_scatter is false (DeepSpeed's
  // choice there); stage 3 always reduce-scatters.
  bool all_reduce_gradients() const { return stage == 0 || (stage <= 2 && !reduce_scatter); }
};

inline ZeroSetup zero_setup(const Config& cfg) {
  return {cfg.zero, cfg.param_dtype(), cfg.grad_accum_dtype, cfg.aio};
}

// Receives the intervals the compute thread spends blocked on communication,
// i.e. the exposed (non-overlapped) communication time.
class CommWaitRecorder {
 public:
  virtual ~CommWaitRecorder() = default;
  virtual void record_wait(int64_t start_ns, int64_t end_ns) = 0;
};

}  // namespace hybrid::engine
