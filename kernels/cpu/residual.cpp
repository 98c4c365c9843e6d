// Residual add: out = a + b. Pure bandwidth; chunked fp32 conversion so fp16/bf16
// use the vector converters, OpenMP across cores for large tensors. out may
// alias a or b (each chunk is read before it is written).
#include <algorithm>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/simd.h"

namespace hybrid::kernels {

namespace {

template <class T>
void residual_fwd(T* out, const T* a, const T* b, size_t n) {
  cpu::for_each_chunk(n, [&](size_t i0, size_t len) {
    float ab[cpu::kChunk], bb[cpu::kChunk], o[cpu::kChunk];
    const float* x = cpu::view_f32(a + i0, ab, len);
    const float* y = cpu::view_f32(b + i0, bb, len);
    for (size_t i = 0; i < len; ++i) o[i] = x[i] + y[i];
    cpu::from_f32(out + i0, o, len);
  });
}

}  // namespace

void CpuBackend::residual_forward(DType dt, void* out, const void* a, const void* b, size_t n) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    residual_fwd(static_cast<T*>(out), static_cast<const T*>(a), static_cast<const T*>(b), n);
  });
}

}  // namespace hybrid::kernels
