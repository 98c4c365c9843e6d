// Helpers shared by the CPU attention kernels (attention.cpp, the flash-style
// one the backend runs, and attention_materialized.cpp, the T×T one kept for
// tests and benchmarks): shape checks and moving one head's slices between the
// strided [B, T, 3C] / [B, T, C] layouts and contiguous fp32 scratch.
#pragma once

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "kernels/cpu/simd.h"

namespace hybrid::kernels::cpu {

// NKV: key/value heads (grouped-query attention), NH for multi-head attention.
inline void check_attention_shape(int B, int T, int C, int NH, int NKV, const char* op) {
  if (B <= 0 || T <= 0 || C <= 0 || NH <= 0 || NKV <= 0 || C % NH != 0 || NH % NKV != 0)
    throw std::invalid_argument(
        std::string(op) +
        ": need positive B, T, C, NH, NKV with C % NH == 0 and NH % NKV == 0, got B = " +
        std::to_string(B) + ", T = " + std::to_string(T) + ", C = " + std::to_string(C) +
        ", NH = " + std::to_string(NH) + ", NKV = " + std::to_string(NKV));
}

// rows × hs slice starting at src (row stride ld) → contiguous fp32.
template <class T>
void gather_head(float* dst, const T* src, int rows, int hs, size_t ld) {
  for (int t = 0; t < rows; ++t) to_f32(dst + size_t(t) * hs, src + size_t(t) * ld, size_t(hs));
}

// dst slice (row stride ld) += contiguous fp32 rows × hs.
template <class T>
void scatter_add_head(T* dst, const float* src, int rows, int hs, size_t ld) {
  float row[1024];
  for (int t = 0; t < rows; ++t) {
    T* d = dst + size_t(t) * ld;
    for (int c0 = 0; c0 < hs; c0 += 1024) {
      const int len = std::min(1024, hs - c0);
      to_f32(row, d + c0, size_t(len));
      const float* s = src + size_t(t) * hs + c0;
      for (int c = 0; c < len; ++c) row[c] += s[c];
      from_f32(d + c0, row, size_t(len));
    }
  }
}

}  // namespace hybrid::kernels::cpu
