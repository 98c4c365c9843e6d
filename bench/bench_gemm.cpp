// What the GEMM providers can do on this machine (docs/kernels.md, "GEMM providers"):
// - gemm_model_shapes: the 15 GEMM shapes of GPT-2 124M's Linear layers at B·T = 1024
//   on every provider, the table hybrid-train's "auto" choice is made from;
// - core_peak: one core's arithmetic ceilings, fp32 FMA against bf16 VDPBF16PS.
//
//   build/bench/bench_gemm [--benchmark_filter=core_peak]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <iterator>
#include <string>
#include <vector>

#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/gemm_provider.h"
#include "kernels/cpu/gemm_selection.h"

namespace {

using hybrid::kernels::DType;
constexpr int BT = 4 * 256, C = 768, Vp = 50304;  // GPT-2 124M, B 4, T 256

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// The model's own GEMMs (the 15 shapes of GPT-2 124M's Linear layers at B·T = 1024:
// forward NT, input gradient NN, weight gradient TN) on every provider: the table
// hybrid-train's "auto" choice is made from, printed once per dtype.
void gemm_model_shapes(benchmark::State& s, DType dt) {
  using hybrid::kernels::cpu::GemmProvider;
  std::vector<hybrid::kernels::cpu::GemmShape> shapes;
  for (auto [K, N] : {std::pair{C, 3 * C}, {C, C}, {C, 4 * C}, {4 * C, C}, {C, Vp}})
    for (hybrid::kernels::cpu::GemmShape g :
         {hybrid::kernels::cpu::GemmShape{dt, false, true, BT, N, K},
          {dt, false, false, BT, K, N},
          {dt, true, false, N, K, BT}})
      shapes.push_back(g);
  constexpr size_t kP = std::size(hybrid::kernels::cpu::kGemmProviders);
  double total[kP] = {}, best_total = 0;  // seconds per pass over all shapes
  for (auto _ : s) {
    std::printf("%-28s", "shape");
    for (GemmProvider p : hybrid::kernels::cpu::kGemmProviders)
      std::printf(" %12s", std::string(hybrid::kernels::cpu::provider_name(p)).c_str());
    std::printf("  fastest\n");
    for (const auto& g : shapes) {
      double rate[kP] = {};
      size_t best = 0;
      for (GemmProvider p : hybrid::kernels::cpu::usable_gemm_providers(dt))
        rate[size_t(p)] = hybrid::kernels::cpu::measure_gemm(p, g, 3, 0.1);
      const double flops = 2.0 * g.M * g.N * g.K;
      std::printf("%-28s", g.str().c_str());
      for (size_t p = 0; p < kP; ++p) {
        total[p] += rate[p] > 0 ? flops / (rate[p] * 1e9) : 0;
        if (rate[p] > rate[best]) best = p;
        std::printf(" %7.1f GF/s", rate[p]);
      }
      best_total += flops / (rate[best] * 1e9);
      std::printf("  %s\n",
                  std::string(hybrid::kernels::cpu::provider_name(GemmProvider(best))).c_str());
    }
  }
  const double n = double(s.iterations());
  std::printf("all %zu shapes once:", shapes.size());
  for (size_t p = 0; p < kP; ++p) {
    const std::string name(hybrid::kernels::cpu::provider_name(GemmProvider(p)));
    s.counters[name + "_s"] = total[p] / n;
    if (total[p] > 0) std::printf(" %s %.3f s,", name.c_str(), total[p] / n);
  }
  s.counters["best_s"] = best_total / n;
  std::printf(" best per shape %.3f s\n", best_total / n);
}

// The arithmetic ceilings of one core: 12 independent 512-bit FMAs (fp32) and
// 24 independent VDPBF16PS (bf16 pairs into fp32) per loop, in registers, on CPU
// time. Their ratio bounds what a bf16 GEMM on AVX512_BF16 can gain over fp32.
#define HYBRID_X12(op)                                                     \
  op " %%zmm30, %%zmm31, %%zmm0\n\t" op " %%zmm30, %%zmm31, %%zmm1\n\t" op \
     " %%zmm30, %%zmm31, %%zmm2\n\t" op " %%zmm30, %%zmm31, %%zmm3\n\t" op \
     " %%zmm30, %%zmm31, %%zmm4\n\t" op " %%zmm30, %%zmm31, %%zmm5\n\t" op \
     " %%zmm30, %%zmm31, %%zmm6\n\t" op " %%zmm30, %%zmm31, %%zmm7\n\t" op \
     " %%zmm30, %%zmm31, %%zmm8\n\t" op " %%zmm30, %%zmm31, %%zmm9\n\t" op \
     " %%zmm30, %%zmm31, %%zmm10\n\t" op " %%zmm30, %%zmm31, %%zmm11\n\t"
#define HYBRID_ZMM12 \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11"

__attribute__((target("avx512f,avx512bf16"))) double core_peak_gflops(bool bf16, long loops) {
  asm volatile("vpxord %%zmm30, %%zmm30, %%zmm30\n\tvpxord %%zmm31, %%zmm31, %%zmm31" ::
                   : "xmm30", "xmm31");
  const double t0 = thread_cpu_seconds();
  if (bf16)
    for (long i = 0; i < loops; ++i) asm volatile(HYBRID_X12("vdpbf16ps")::: HYBRID_ZMM12);
  else
    for (long i = 0; i < loops; ++i) asm volatile(HYBRID_X12("vfmadd231ps")::: HYBRID_ZMM12);
  const double flops_per_instr = bf16 ? 64.0 : 32.0;  // 16 lanes × (2 pairs | 1 FMA) × 2
  return 12.0 * double(loops) * flops_per_instr / (thread_cpu_seconds() - t0) / 1e9;
}

void core_peak(benchmark::State& s) {
  if (!hybrid::kernels::cpu::bf16_kernel_available()) {
    s.SkipWithError("the CPU has no AVX512_BF16");
    return;
  }
  std::vector<double> f32, bf;
  for (auto _ : s) {
    f32.push_back(core_peak_gflops(false, 20000000));
    bf.push_back(core_peak_gflops(true, 20000000));
  }
  std::sort(f32.begin(), f32.end());
  std::sort(bf.begin(), bf.end());
  const double a = f32[f32.size() / 2], b = bf[bf.size() / 2];
  s.counters["fp32_fma_GFLOP/s"] = a;
  s.counters["bf16_dot_GFLOP/s"] = b;
  s.counters["bf16/fp32"] = b / a;
  std::printf(
      "one core: fp32 FMA (zmm) %.1f GFLOP/s, bf16 VDPBF16PS (zmm) %.1f GFLOP/s, ratio %.2f\n", a,
      b, b / a);
}

BENCHMARK(core_peak)->Iterations(5);
BENCHMARK_CAPTURE(gemm_model_shapes, fp32, DType::f32)->Iterations(1)->UseRealTime();
BENCHMARK_CAPTURE(gemm_model_shapes, bf16, DType::bf16)->Iterations(1)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
