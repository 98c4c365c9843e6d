// The CPU attention that materialises the causal softmax P (fp32 [B, NH, T, T])
// in forward and keeps it for backward: the backend's kernel before the
// flash-style one (attention.cpp) replaced it. Not used by the backend; kept
// callable so that tests can check the new kernel's gradients against it and
// bench_kernels can time both side by side. Same arguments and contract as
// Backend::attention_* (kernels/ops.h), with saved holding P.
#pragma once

#include <cstddef>

#include "kernels/dtype.h"

namespace hybrid::kernels::cpu {

size_t attention_materialized_saved_bytes(int B, int T, int NH);
void attention_materialized_forward(DType dt, void* out, float* saved, const void* qkv, int B,
                                    int T, int C, int NH);
void attention_materialized_backward(DType dt, void* dqkv, const void* dout, const void* qkv,
                                     const float* saved, int B, int T, int C, int NH);

}  // namespace hybrid::kernels::cpu
