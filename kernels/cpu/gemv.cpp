// gemv (gemv.h): the instruction set chosen at run time, the columns split
// across the threads, the bias added and each output rounded once.
//
// The columns go to the threads in contiguous chunks, about eight a thread,
// each taken by the next thread free (a dynamic schedule): a chunk is still a
// long stretch of the weight, which the prefetchers follow, and a thread that
// the host slows down no longer holds the other at the region's end. With
// equal halves (a static schedule) a bf16 decode step of GPT-2 124M spent 9 %
// of its samples in libgomp's wait at that barrier, 3 % with chunks, and
// took 9.7 -> 8.9 ms (AMD EPYC Zen 4, 2 vCPUs, medians of 6 interleaved runs;
// fp32 too noisy to tell: 17.4 -> 16.4). The inner loops (gemv_kernels.h)
// read each weight row of a block of four once for all the input rows.
#include "kernels/cpu/gemv.h"

#include <omp.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/gemv_kernels.h"
#include "kernels/cpu/simd.h"

namespace hybrid::kernels::cpu {

namespace {

using gemv_detail::BlockFn;
using gemv_detail::kGemvCols;

constexpr int kChunksPerThread = 8;

bool cpu_has(GemvIsa isa) {
  switch (isa) {
    case GemvIsa::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case GemvIsa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl");
    case GemvIsa::avx512bf16:
      return cpu_has(GemvIsa::avx512) && __builtin_cpu_supports("avx512bf16");
  }
  return false;
}

// out[m, j + c] = sums[m][c] (+ bias[j + c]) in T, for the block's columns.
template <class T>
void store_block(T* out, const T* bias, const float* sums, int M, int N, int j, int cols) {
  for (int m = 0; m < M; ++m)
    for (int c = 0; c < cols; ++c)
      out[size_t(m) * N + j + c] =
          store<T>(sums[m * kGemvCols + c] + (bias ? load(bias[j + c]) : 0.0f));
}

// Every block of kGemvCols columns through fn; x as fn reads it.
template <class T>
void run_blocks(BlockFn fn, const void* x, T* out, const T* weight, const T* bias, int M, int K,
                int N) {
  const int blocks = (N + kGemvCols - 1) / kGemvCols;
  const int chunk = std::max(1, blocks / (kChunksPerThread * omp_get_max_threads()));
#pragma omp parallel for schedule(dynamic, chunk) if (size_t(N) * K > kParallelMin)
  for (int blk = 0; blk < blocks; ++blk) {
    float sums[kGemvMaxRows * kGemvCols];
    const int j = blk * kGemvCols, cols = std::min(kGemvCols, N - j);
    fn(x, weight + size_t(j) * K, K, M, cols, sums);
    store_block(out, bias, sums, M, N, j, cols);
  }
}

}  // namespace

std::string_view gemv_isa_name(GemvIsa isa) {
  switch (isa) {
    case GemvIsa::avx2:
      return "avx2";
    case GemvIsa::avx512:
      return "avx512";
    case GemvIsa::avx512bf16:
      return "avx512bf16";
  }
  return "?";
}

bool gemv_isa_allowed(GemvIsa isa, const char* max_cpu_isa) {
  if (!max_cpu_isa) return true;
  if (isa == GemvIsa::avx512bf16) return bf16_isa_allowed(max_cpu_isa);
  const std::string cap = max_cpu_isa;
  // The caps below each isa, in oneDNN's names.
  std::vector<std::string> below = {"SSE41", "AVX"};
  if (isa == GemvIsa::avx512) below.insert(below.end(), {"AVX2", "AVX2_VNNI", "AVX2_VNNI_2"});
  for (const std::string& b : below)
    if (cap == b) return false;
  return true;
}

bool gemv_isa_available(GemvIsa isa) {
  static const bool ok[3] = {
      cpu_has(GemvIsa::avx2) && gemv_isa_allowed(GemvIsa::avx2, std::getenv("ONEDNN_MAX_CPU_ISA")),
      cpu_has(GemvIsa::avx512) &&
          gemv_isa_allowed(GemvIsa::avx512, std::getenv("ONEDNN_MAX_CPU_ISA")),
      cpu_has(GemvIsa::avx512bf16) &&
          gemv_isa_allowed(GemvIsa::avx512bf16, std::getenv("ONEDNN_MAX_CPU_ISA"))};
  return ok[int(isa)];
}

bool gemv_isa_for(DType dt, GemvIsa* isa) {
  for (GemvIsa i : {GemvIsa::avx512bf16, GemvIsa::avx512, GemvIsa::avx2})
    if (gemv_isa_available(i) && (i != GemvIsa::avx512bf16 || dt == DType::bf16)) {
      *isa = i;
      return true;
    }
  return false;
}

void gemv_on(GemvIsa isa, DType dt, void* out, const void* inp, const void* weight,
             const void* bias, int M, int K, int N) {
  if (M < 1 || M > kGemvMaxRows || K < 0 || N < 0)
    throw std::invalid_argument("gemv: M = " + std::to_string(M) + " must be in [1, " +
                                std::to_string(kGemvMaxRows) + "], K = " + std::to_string(K) +
                                " and N = " + std::to_string(N) + " not negative");
  if (!gemv_isa_available(isa) || (isa == GemvIsa::avx512bf16 && dt != DType::bf16))
    throw std::invalid_argument("gemv: " + std::string(gemv_isa_name(isa)) + " cannot run " +
                                std::string(dtype_name(dt)) + " here");
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    const auto* in = static_cast<const T*>(inp);
    const void* x = in;  // fp32, or bf16 for avx512bf16
    if (!std::is_same_v<T, float> && isa != GemvIsa::avx512bf16) {
      float* x32 = thread_scratch(0, size_t(M) * K);
      to_f32(x32, in, size_t(M) * K);
      x = x32;
    }
    const BlockFn fn = isa == GemvIsa::avx2     ? gemv_detail::avx2_block(dt)
                       : isa == GemvIsa::avx512 ? gemv_detail::avx512_block(dt)
                                                : gemv_detail::avx512bf16_block();
    run_blocks(fn, x, static_cast<T*>(out), static_cast<const T*>(weight),
               static_cast<const T*>(bias), M, K, N);
  });
}

void gemv(DType dt, void* out, const void* inp, const void* weight, const void* bias, int M, int K,
          int N) {
  GemvIsa isa;
  if (!gemv_isa_for(dt, &isa)) throw std::runtime_error("gemv: the CPU has no AVX2");
  gemv_on(isa, dt, out, inp, weight, bias, M, K, N);
}

}  // namespace hybrid::kernels::cpu
