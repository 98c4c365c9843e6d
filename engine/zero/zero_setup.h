// The resolved ZeRO settings the runtime pieces share.
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace hybrid::engine {

struct ZeroSetup {
  int stage = 0;
  kernels::DType param_dtype = kernels::DType::f32;  // parameters and working gradients
  kernels::DType accum_dtype = kernels::DType::f32;  // gradient accumulation
  int64_t reduce_bucket_elems = 500'000'000;
  int64_t allgather_bucket_elems = 500'000'000;
  bool overlap_comm = false;
  int64_t prefetch_bucket_elems = 50'000'000;
  int64_t persistence_threshold = 100'000;
  int64_t max_live_parameters = 1'000'000'000;

  // fp32 master weights are a separate buffer only when parameters are 16-bit.
  bool separate_master() const { return param_dtype != kernels::DType::f32; }
  // Stages 0/1 keep a full gradient buffer; its accumulator is separate when the
  // accumulation dtype differs from the working dtype.
  bool separate_accum() const { return param_dtype != accum_dtype; }
};

// Receives the intervals the compute thread spends blocked on communication,
// i.e. the exposed (non-overlapped) communication time.
class CommWaitRecorder {
 public:
  virtual ~CommWaitRecorder() = default;
  virtual void record_wait(int64_t start_ns, int64_t end_ns) = 0;
};

}  // namespace hybrid::engine
