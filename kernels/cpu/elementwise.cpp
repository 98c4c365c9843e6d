// Elementwise ops and reductions over flat buffers: convert, add, scale, grad_stats.
//
// All are memory-bound: one chunked pass, fp32 conversion through the vector
// converters, OpenMP over chunks. grad_stats fuses the sum of squares (double
// accumulators, so huge finite values cannot overflow into a false inf) with the
// non-finite test, which looks at exponent bits (all ones = inf or NaN) rather
// than at the sum, so it is exact for every dtype.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/simd.h"

namespace hybrid::kernels {

namespace {

inline int64_t chunk_count(size_t n) { return int64_t((n + cpu::kChunk - 1) / cpu::kChunk); }

template <class D, class S>
void convert_impl(D* dst, const S* src, size_t n) {
  if constexpr (std::is_same_v<D, S>) {
    if (static_cast<const void*>(dst) == static_cast<const void*>(src)) return;
  }
  cpu::for_each_chunk(n, [&](size_t i0, size_t len) {
    if constexpr (std::is_same_v<D, S>) {
      std::memcpy(dst + i0, src + i0, len * sizeof(D));
    } else {
      float b[cpu::kChunk];
      cpu::from_f32(dst + i0, cpu::view_f32(src + i0, b, len), len);
    }
  });
}

template <class D, class S>
void add_impl(D* dst, const S* src, size_t n, float alpha) {
  cpu::for_each_chunk(n, [&](size_t i0, size_t len) {
    float sb[cpu::kChunk], d[cpu::kChunk];
    const float* s = cpu::view_f32(src + i0, sb, len);
    cpu::to_f32(d, dst + i0, len);
    for (size_t i = 0; i < len; ++i) d[i] += alpha * s[i];
    cpu::from_f32(dst + i0, d, len);
  });
}

template <class T>
void scale_impl(T* x, size_t n, float alpha) {
  cpu::for_each_chunk(n, [&](size_t i0, size_t len) {
    float d[cpu::kChunk];
    cpu::to_f32(d, x + i0, len);
    for (size_t i = 0; i < len; ++i) d[i] *= alpha;
    cpu::from_f32(x + i0, d, len);
  });
}

// Bits of the exponent field: an element is inf/NaN when all of them are set.
template <class T>
constexpr uint32_t exponent_mask() {
  if constexpr (std::is_same_v<T, float>)
    return 0x7f800000u;
  else if constexpr (std::is_same_v<T, bf16_t>)
    return 0x7f80u;
  else
    return 0x7c00u;
}

template <class T>
GradStats grad_stats_impl(const T* x, size_t n) {
  using Bits = std::conditional_t<std::is_same_v<T, float>, uint32_t, uint16_t>;
  constexpr uint32_t mask = exponent_mask<T>();
  double sum = 0.0;
  int non_finite = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum) reduction(| : non_finite) \
    if (n > cpu::kParallelMin)
  for (int64_t ch = 0; ch < chunk_count(n); ++ch) {
    const size_t i0 = size_t(ch) * cpu::kChunk, len = std::min(cpu::kChunk, n - i0);
    Bits bits[cpu::kChunk];
    std::memcpy(bits, x + i0, len * sizeof(Bits));
    int bad = 0;
#pragma omp simd reduction(| : bad)
    for (size_t i = 0; i < len; ++i) bad |= int((uint32_t(bits[i]) & mask) == mask);
    float fb[cpu::kChunk];
    const float* f = cpu::view_f32(x + i0, fb, len);
    double s = 0.0;
#pragma omp simd reduction(+ : s)
    for (size_t i = 0; i < len; ++i) s += double(f[i]) * double(f[i]);
    sum += s;
    non_finite |= bad;
  }
  return GradStats{sum, non_finite != 0};
}

}  // namespace

void CpuBackend::convert(DType dst_dt, void* dst, DType src_dt, const void* src, size_t n) {
  dispatch_dtype(dst_dt, [&](auto dtag) {
    dispatch_dtype(src_dt, [&](auto stag) {
      using D = decltype(dtag);
      using S = decltype(stag);
      convert_impl(static_cast<D*>(dst), static_cast<const S*>(src), n);
    });
  });
}

void CpuBackend::add(DType dst_dt, void* dst, DType src_dt, const void* src, size_t n,
                     float alpha) {
  dispatch_dtype(dst_dt, [&](auto dtag) {
    dispatch_dtype(src_dt, [&](auto stag) {
      using D = decltype(dtag);
      using S = decltype(stag);
      add_impl(static_cast<D*>(dst), static_cast<const S*>(src), n, alpha);
    });
  });
}

void CpuBackend::scale(DType dt, void* x, size_t n, float alpha) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    scale_impl(static_cast<T*>(x), n, alpha);
  });
}

GradStats CpuBackend::grad_stats(DType dt, const void* x, size_t n) {
  return dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    return grad_stats_impl(static_cast<const T*>(x), n);
  });
}

}  // namespace hybrid::kernels
