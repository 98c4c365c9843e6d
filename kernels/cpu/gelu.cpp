// GELU, tanh approximation (GPT-2): 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
//
// Chunked: each chunk is converted to fp32 on the stack, the formula runs as one
// vectorised loop (fast_tanh is branch-free; libm's tanhf would not vectorise),
// and the result is converted back. Backward fuses the derivative with the
// "+=" into dinp, so dinp is read and written once.
#include <algorithm>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/simd.h"

namespace hybrid::kernels {

namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

template <class T>
void gelu_fwd(T* out, const T* inp, size_t n) {
  cpu::for_each_chunk(n, [&](size_t i0, size_t len) {
    float xb[cpu::kChunk], o[cpu::kChunk];
    const float* x = cpu::view_f32(inp + i0, xb, len);
    for (size_t i = 0; i < len; ++i) {
      const float u = kSqrt2OverPi * (x[i] + kCubic * x[i] * x[i] * x[i]);
      o[i] = 0.5f * x[i] * (1.0f + cpu::fast_tanh(u));
    }
    cpu::from_f32(out + i0, o, len);
  });
}

template <class T>
void gelu_bwd(T* dinp, const T* inp, const T* dout, size_t n) {
  cpu::for_each_chunk(n, [&](size_t i0, size_t len) {
    float xb[cpu::kChunk], gb[cpu::kChunk], d[cpu::kChunk];
    const float* x = cpu::view_f32(inp + i0, xb, len);
    const float* g = cpu::view_f32(dout + i0, gb, len);
    cpu::to_f32(d, dinp + i0, len);
    for (size_t i = 0; i < len; ++i) {
      const float x2 = x[i] * x[i];
      const float t = cpu::fast_tanh(kSqrt2OverPi * (x[i] + kCubic * x2 * x[i]));
      const float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * x2);
      const float grad = 0.5f * (1.0f + t) + 0.5f * x[i] * (1.0f - t * t) * du;
      d[i] += grad * g[i];
    }
    cpu::from_f32(dinp + i0, d, len);
  });
}

}  // namespace

void CpuBackend::gelu_forward(DType dt, void* out, const void* inp, size_t n) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    gelu_fwd(static_cast<T*>(out), static_cast<const T*>(inp), n);
  });
}

void CpuBackend::gelu_backward(DType dt, void* dinp, const void* inp, const void* dout, size_t n) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    gelu_bwd(static_cast<T*>(dinp), static_cast<const T*>(inp), static_cast<const T*>(dout), n);
  });
}

}  // namespace hybrid::kernels
