// Rotary position embedding (the Llama family), in place, rotate-half layout:
// in head h of row r, the pair (x[i], x[i + d/2]) turns by angle p·inv_freq[i],
// inv_freq[i] = 1/θ^(2i/d), p the row's position. As Hugging Face computes it:
// inv_freq in fp32 (powf), the angle p·inv_freq as an fp32 product, its cos and
// sin in fp32. Backward applies the transposed rotation to the gradient.
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/simd.h"

namespace hybrid::kernels {

namespace {

std::vector<float> inverse_frequencies(int head_dim, float theta) {
  std::vector<float> inv(size_t(head_dim / 2));
  for (int i = 0; i < head_dim / 2; ++i)
    inv[size_t(i)] = 1.0f / std::pow(theta, float(2 * i) / float(head_dim));
  return inv;
}

// sign +1: forward (x1·c − x2·s, x2·c + x1·s); −1: its transpose.
template <class T>
void rope_apply(T* x, const int32_t* positions, int N, int T_len, int stride, int heads, int d,
                float theta, float sign) {
  const std::vector<float> inv = inverse_frequencies(d, theta);
  const int half = d / 2;
#pragma omp parallel for schedule(static) if (size_t(N) * heads * d > cpu::kParallelMin)
  for (int r = 0; r < N; ++r) {
    float* cs = cpu::thread_scratch(0, size_t(d));  // cos in [0, half), sin in [half, d)
    float* buf = cpu::thread_scratch(1, size_t(d));
    const float p = float(positions ? positions[r] : r % T_len);
    for (int i = 0; i < half; ++i) {
      const float angle = p * inv[size_t(i)];
      cs[i] = std::cos(angle);
      cs[half + i] = sign * std::sin(angle);
    }
    for (int h = 0; h < heads; ++h) {
      T* head = x + size_t(r) * stride + size_t(h) * d;
      cpu::to_f32(buf, head, size_t(d));
      for (int i = 0; i < half; ++i) {
        const float x1 = buf[i], x2 = buf[half + i], c = cs[i], s = cs[half + i];
        buf[i] = x1 * c - x2 * s;
        buf[half + i] = x2 * c + x1 * s;
      }
      cpu::from_f32(head, buf, size_t(d));
    }
  }
}

}  // namespace

void CpuBackend::rope_forward(DType dt, void* x, const int32_t* positions, int N, int T, int stride,
                              int heads, int head_dim, float theta) {
  dispatch_dtype(dt, [&](auto tag) {
    using E = decltype(tag);
    rope_apply(static_cast<E*>(x), positions, N, T, stride, heads, head_dim, theta, 1.0f);
  });
}

void CpuBackend::rope_backward(DType dt, void* dx, const int32_t* positions, int N, int T,
                               int stride, int heads, int head_dim, float theta) {
  dispatch_dtype(dt, [&](auto tag) {
    using E = decltype(tag);
    rope_apply(static_cast<E*>(dx), positions, N, T, stride, heads, head_dim, theta, -1.0f);
  });
}

}  // namespace hybrid::kernels
