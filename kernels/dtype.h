// Storage dtypes and their host-side conversions.
//
// Compute is always fp32; fp16/bf16 are storage formats. The conversions here
// are exact IEEE round-to-nearest-even, usable on any host (the CPU kernels
// have vectorised paths of their own).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#if defined(__F16C__) && !defined(__CUDACC__)
#include <immintrin.h>
#endif

namespace hybrid::kernels {

enum class DType : uint8_t { f32 = 0, f16 = 1, bf16 = 2 };

constexpr size_t dtype_size(DType dt) { return dt == DType::f32 ? 4 : 2; }

constexpr std::string_view dtype_name(DType dt) {
  switch (dt) {
    case DType::f32:
      return "fp32";
    case DType::f16:
      return "fp16";
    case DType::bf16:
      return "bf16";
  }
  return "?";
}

// Accepts the spellings DeepSpeed configs use ("fp32", "float32", "fp16", "float16", "half",
// "bf16", "bfloat16").
DType parse_dtype(std::string_view name);

struct bf16_t {
  uint16_t bits;
};
struct f16_t {
  uint16_t bits;
};

inline float bf16_to_float(bf16_t h) { return std::bit_cast<float>(uint32_t(h.bits) << 16); }

inline bf16_t float_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {uint16_t((u >> 16) | 0x40)};  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return {uint16_t(u >> 16)};
}

float f16_to_float_slow(f16_t h);
f16_t float_to_f16_slow(float f);

// With F16C (every x86-64-v3 CPU) one instruction does the exact conversion; the
// portable versions above are the reference (tests/kernels checks they agree).
#if defined(__F16C__) && !defined(__CUDACC__)
inline float f16_to_float(f16_t h) { return _cvtsh_ss(h.bits); }
inline f16_t float_to_f16(float f) {
  return {uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))};
}
#else
inline float f16_to_float(f16_t h) { return f16_to_float_slow(h); }
inline f16_t float_to_f16(float f) { return float_to_f16_slow(f); }
#endif

// Generic load/store used by templated kernels: T is float, f16_t or bf16_t.
template <class T>
inline float load(const T& x) {
  if constexpr (std::is_same_v<T, float>)
    return x;
  else if constexpr (std::is_same_v<T, bf16_t>)
    return bf16_to_float(x);
  else
    return f16_to_float(x);
}
template <class T>
inline T store(float f) {
  if constexpr (std::is_same_v<T, float>)
    return f;
  else if constexpr (std::is_same_v<T, bf16_t>)
    return float_to_bf16(f);
  else
    return float_to_f16(f);
}

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>)
    return DType::f32;
  else if constexpr (std::is_same_v<T, bf16_t>)
    return DType::bf16;
  else
    return DType::f16;
}

// Calls fn with a value of the storage type for dt (float, f16_t or bf16_t): one
// switch for every dtype-dispatching call site.
template <class Fn>
decltype(auto) dispatch_dtype(DType dt, Fn&& fn) {
  switch (dt) {
    case DType::f32:
      return fn(float{});
    case DType::f16:
      return fn(f16_t{});
    case DType::bf16:
      return fn(bf16_t{});
  }
  throw std::logic_error("dispatch_dtype: invalid dtype");
}

}  // namespace hybrid::kernels
