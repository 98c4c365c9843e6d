// CPU backend kernels at GPT-2 124M shapes (B 4, T 256, C 768, NH 12, V 50257 → Vp 50304),
// fp32 and bf16 storage, plus the GEMM library comparison.
//
// Every benchmark reports FLOP/s and bytes/s (Google Benchmark rate counters) and
// runs on wall-clock time (the work is on OpenMP threads, not only the main one).
// FLOPs of matmul/attention are the nominal 2·M·N·K (attention counts the full
// T×T, as llm.c does, though the kernel skips the masked half); elementwise ops
// count the arithmetic of their formula per element (stated at each benchmark).
//
// gemm_providers runs every GEMM provider (oneDNN, OpenBLAS) alternately inside one
// benchmark, so the ratios in its counters are measured under the same conditions.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/cpu_kernel_bench.h"
#include "bench/slowdown.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/openblas.h"
#include "kernels/ops.h"

namespace {

using hybrid::bench::backend;
using hybrid::bench::Buffer;
using hybrid::bench::counters;
using hybrid::bench::es;
using hybrid::bench::loop;
using hybrid::bench::tokens;
using hybrid::kernels::DType;

constexpr int B = 4, T = 256, C = 768, NH = 12, V = 50257, Vp = 50304;
constexpr int BT = B * T;

// ---- linear layers ------------------------------------------------------------

// One linear layer forward of GPT-2: M = B·T rows, K → N. FLOPs 2·M·N·K.
void matmul_forward(benchmark::State& s, DType dt, int K, int N) {
  Buffer out(dt, size_t(BT) * N), inp(dt, size_t(BT) * K), w(dt, size_t(N) * K), b(dt, N);
  for (auto _ : loop(s, __func__, dt))
    backend().matmul_forward(dt, out.get(), inp.get(), w.get(), b.get(), BT, K, N);
  counters(s, 2.0 * BT * N * K, es(dt) * (double(BT) * K + double(N) * K + N + double(BT) * N));
}

// Backward: dinp and dweight GEMMs (2 × 2·M·N·K) plus the bias column sums.
void matmul_backward(benchmark::State& s, DType dt, int K, int N) {
  Buffer dinp(dt, size_t(BT) * K, 0, 0), dw(dt, size_t(N) * K, 0, 0), db(dt, N, 0, 0);
  Buffer dout(dt, size_t(BT) * N), inp(dt, size_t(BT) * K), w(dt, size_t(N) * K);
  for (auto _ : loop(s, __func__, dt))
    backend().matmul_backward(dt, dinp.get(), dw.get(), db.get(), dout.get(), inp.get(), w.get(),
                              BT, K, N);
  counters(s, 4.0 * BT * N * K + double(BT) * N,
           es(dt) * (double(BT) * N + 3.0 * BT * K + 3.0 * N * K + 2.0 * N));
}

// ---- transformer ops ----------------------------------------------------------

// out = wte[token] + wpe[t]: 1 FLOP per element, 3 streams.
void encoder_forward(benchmark::State& s, DType dt) {
  Buffer out(dt, size_t(BT) * C), wte(dt, size_t(Vp) * C), wpe(dt, size_t(T) * C);
  const auto tok = tokens(BT, V);
  for (auto _ : loop(s, __func__, dt))
    backend().encoder_forward(dt, out.get(), tok.data(), nullptr, wte.get(), wpe.get(), B, T, C);
  counters(s, double(BT) * C, es(dt) * 3.0 * BT * C);
}

// dwte[token] += dout, dwpe[t] += dout: 2 FLOPs per element.
void encoder_backward(benchmark::State& s, DType dt) {
  Buffer dout(dt, size_t(BT) * C), dwte(dt, size_t(Vp) * C, 0, 0), dwpe(dt, size_t(T) * C, 0, 0);
  const auto tok = tokens(BT, V);
  for (auto _ : loop(s, __func__, dt))
    backend().encoder_backward(dt, dwte.get(), dwpe.get(), dout.get(), tok.data(), nullptr, B, T,
                               C);
  counters(s, 2.0 * BT * C, es(dt) * 5.0 * BT * C);
}

// Mean, variance (3), normalise-scale-shift (4): 8 FLOPs per element.
void layernorm_forward(benchmark::State& s, DType dt) {
  Buffer out(dt, size_t(BT) * C), inp(dt, size_t(BT) * C), w(dt, C), b(dt, C);
  std::vector<float> mean(BT), rstd(BT);
  for (auto _ : loop(s, __func__, dt))
    backend().layernorm_forward(dt, out.get(), mean.data(), rstd.data(), inp.get(), w.get(),
                                b.get(), BT, C);
  counters(s, 8.0 * BT * C, es(dt) * 2.0 * BT * C + 8.0 * BT);
}

// Recompute norm (2), two reductions (3), dinp (5), dweight/dbias (3): 13 FLOPs per element.
void layernorm_backward(benchmark::State& s, DType dt) {
  Buffer dinp(dt, size_t(BT) * C, 0, 0), dw(dt, C, 0, 0), db(dt, C, 0, 0);
  Buffer dout(dt, size_t(BT) * C), inp(dt, size_t(BT) * C), w(dt, C);
  std::vector<float> mean(BT, 0.0f), rstd(BT, 1.0f);
  for (auto _ : loop(s, __func__, dt))
    backend().layernorm_backward(dt, dinp.get(), dw.get(), db.get(), dout.get(), inp.get(), w.get(),
                                 mean.data(), rstd.data(), BT, C);
  counters(s, 13.0 * BT * C, es(dt) * 4.0 * BT * C + 8.0 * BT);
}

// GELU on the MLP hidden layer (B·T·4C). Forward ≈ 20 FLOPs per element (the
// exp polynomial inside tanh included), backward ≈ 30.
void gelu_forward(benchmark::State& s, DType dt) {
  const size_t n = size_t(BT) * 4 * C;
  Buffer out(dt, n), inp(dt, n, -4, 4);
  for (auto _ : loop(s, __func__, dt)) backend().gelu_forward(dt, out.get(), inp.get(), n);
  counters(s, 20.0 * n, es(dt) * 2.0 * n);
}

void gelu_backward(benchmark::State& s, DType dt) {
  const size_t n = size_t(BT) * 4 * C;
  Buffer dinp(dt, n, 0, 0), inp(dt, n, -4, 4), dout(dt, n);
  for (auto _ : loop(s, __func__, dt))
    backend().gelu_backward(dt, dinp.get(), inp.get(), dout.get(), n);
  counters(s, 30.0 * n, es(dt) * 4.0 * n);
}

// Nominal FLOPs: q·kᵀ and P·v, 2·T·T·hs each per (b, h) = 4·B·T²·C.
void attention_forward(benchmark::State& s, DType dt) {
  Buffer out(dt, size_t(BT) * C), qkv(dt, size_t(BT) * 3 * C);
  const size_t saved_bytes = backend().attention_saved_bytes(dt, B, T, C, NH);
  std::vector<float> saved(saved_bytes / sizeof(float));
  for (auto _ : loop(s, __func__, dt))
    backend().attention_forward(dt, out.get(), saved.data(), qkv.get(), nullptr, B, T, C, NH, NH);
  counters(s, 4.0 * B * T * double(T) * C, es(dt) * 4.0 * BT * C + double(saved_bytes));
}

// Nominal FLOPs: four T×T×hs GEMMs per (b, h) = 8·B·T²·C.
void attention_backward(benchmark::State& s, DType dt) {
  Buffer out(dt, size_t(BT) * C), qkv(dt, size_t(BT) * 3 * C), dout(dt, size_t(BT) * C);
  Buffer dqkv(dt, size_t(BT) * 3 * C, 0, 0);
  const size_t saved_bytes = backend().attention_saved_bytes(dt, B, T, C, NH);
  std::vector<float> saved(saved_bytes / sizeof(float));
  backend().attention_forward(dt, out.get(), saved.data(), qkv.get(), nullptr, B, T, C, NH, NH);
  for (auto _ : loop(s, __func__, dt))
    backend().attention_backward(dt, dqkv.get(), dout.get(), qkv.get(), out.get(), saved.data(),
                                 nullptr, B, T, C, NH, NH);
  counters(s, 8.0 * B * T * double(T) * C, es(dt) * 10.0 * BT * C + double(saved_bytes));
}

// out = a + b: 1 FLOP, 3 streams per element.
void residual_forward(benchmark::State& s, DType dt) {
  const size_t n = size_t(BT) * C;
  Buffer out(dt, n), a(dt, n), b(dt, n);
  for (auto _ : loop(s, __func__, dt))
    backend().residual_forward(dt, out.get(), a.get(), b.get(), n);
  counters(s, double(n), es(dt) * 3.0 * n);
}

// Forward: max (1), subtract + exp (≈ 12) + sum (1) per logit ≈ 14 FLOPs.
void cross_entropy_forward(benchmark::State& s, DType dt) {
  Buffer logits(dt, size_t(BT) * Vp, -4, 4);
  std::vector<float> losses(BT), lse(BT);
  const auto tgt = tokens(BT, V);
  for (auto _ : loop(s, __func__, dt))
    backend().cross_entropy_forward(dt, losses.data(), lse.data(), logits.get(), tgt.data(), BT, V,
                                    Vp);
  counters(s, 14.0 * BT * V, es(dt) * double(BT) * Vp);
}

// Backward (in place, as the engine runs it): subtract + exp + scale ≈ 14 FLOPs per logit.
void cross_entropy_backward(benchmark::State& s, DType dt) {
  Buffer logits(dt, size_t(BT) * Vp, -4, 4);
  std::vector<float> losses(BT), lse(BT);
  const auto tgt = tokens(BT, V);
  backend().cross_entropy_forward(dt, losses.data(), lse.data(), logits.get(), tgt.data(), BT, V,
                                  Vp);
  for (auto _ : loop(s, __func__, dt))
    backend().cross_entropy_backward(dt, logits.get(), logits.get(), lse.data(), tgt.data(),
                                     1.0f / BT, BT, V, Vp);
  counters(s, 14.0 * BT * V, es(dt) * 2.0 * BT * Vp);
}

// ---- elementwise over a 16 Mi-element flat buffer (a slice of the 124M parameters) ----
constexpr size_t kFlat = size_t(16) << 20;

// fp32 master → dt working copy (0 FLOPs counted as 1 per element for the rate).
void convert(benchmark::State& s, DType dt) {
  Buffer src(DType::f32, kFlat), dst(dt, kFlat);
  for (auto _ : loop(s, __func__, dt))
    backend().convert(dt, dst.get(), DType::f32, src.get(), kFlat);
  counters(s, double(kFlat), (4.0 + es(dt)) * kFlat);
}

// dst += alpha·src (gradient accumulation into fp32): 2 FLOPs per element.
void add(benchmark::State& s, DType dt) {
  Buffer dst(DType::f32, kFlat), src(dt, kFlat);
  for (auto _ : loop(s, __func__, dt))
    backend().add(DType::f32, dst.get(), dt, src.get(), kFlat, 1e-3f);
  counters(s, 2.0 * kFlat, (8.0 + es(dt)) * kFlat);
}

void scale(benchmark::State& s, DType dt) {
  Buffer x(dt, kFlat);
  for (auto _ : loop(s, __func__, dt)) backend().scale(dt, x.get(), kFlat, 1.0f);
  counters(s, double(kFlat), 2.0 * es(dt) * kFlat);
}

// Σx² and the inf/NaN test: 2 FLOPs per element, one read.
void grad_stats(benchmark::State& s, DType dt) {
  Buffer x(dt, kFlat);
  for (auto _ : loop(s, __func__, dt))
    benchmark::DoNotOptimize(backend().grad_stats(dt, x.get(), kFlat));
  counters(s, 2.0 * kFlat, es(dt) * kFlat);
}

// AdamW with dt gradients and a dt param_out: ≈ 16 FLOPs per element; master, m, v
// read and written (24 bytes), grad read and param_out written (2·es).
void adamw(benchmark::State& s, DType dt) {
  Buffer master(DType::f32, kFlat), m(DType::f32, kFlat, 0, 0), v(DType::f32, kFlat, 0, 0);
  Buffer grad(dt, kFlat), out(dt, kFlat);
  hybrid::kernels::AdamWParams p;
  p.weight_decay = 0.1f;
  for (auto _ : loop(s, __func__, dt))
    backend().adamw(p, master.as<float>(), m.as<float>(), v.as<float>(), dt, grad.get(), 1.0f, dt,
                    out.get(), kFlat);
  counters(s, 16.0 * kFlat, (24.0 + 2.0 * es(dt)) * kFlat);
}

// ---- attention's per-head GEMMs: where the threads go -------------------------
// The B·NH = 48 score GEMMs q·kᵀ (T × T × hs) of one attention forward, run (a) as
// attention runs them, one head per OpenMP thread with oneDNN single-threaded
// inside the region, and (b) one head after another, each GEMM threaded by
// oneDNN. Alternated in one benchmark; the counter is the speed-up of (a) over (b).
void attention_gemm_threading(benchmark::State& s) {
  const int heads = B * NH, hs = C / NH;
  Buffer q(DType::f32, size_t(heads) * T * hs), k(DType::f32, size_t(heads) * T * hs);
  Buffer S(DType::f32, size_t(heads) * T * T, 0, 0);
  const float* qp = q.as<float>();
  const float* kp = k.as<float>();
  float* sp = S.as<float>();
  auto head = [&](int h) {
    hybrid::kernels::cpu::gemm(DType::f32, false, true, T, T, hs, 1.0f, qp + size_t(h) * T * hs, hs,
                               kp + size_t(h) * T * hs, hs, 0.0f, sp + size_t(h) * T * T, T);
  };
#ifndef _OPENMP
  s.SkipWithError("built without OpenMP: nothing to compare");
  return;
#endif
  using clock = std::chrono::steady_clock;
  double t_inside = 0.0, t_serial = 0.0;
  for (auto _ : s) {
    const auto t0 = clock::now();
#pragma omp parallel for schedule(dynamic, 1)
    for (int h = 0; h < heads; ++h) head(h);
    const auto t1 = clock::now();
    for (int h = 0; h < heads; ++h) head(h);
    const auto t2 = clock::now();
    t_inside += std::chrono::duration<double>(t1 - t0).count();
    t_serial += std::chrono::duration<double>(t2 - t1).count();
  }
  const double flops = 2.0 * heads * T * double(T) * hs * double(s.iterations());
  s.counters["per_head_threads_GFLOP/s"] = flops / t_inside / 1e9;
  s.counters["threaded_gemm_GFLOP/s"] = flops / t_serial / 1e9;
  s.counters["speedup"] = t_serial / t_inside;
}

// ---- GEMM library comparison: 2048 × 3072 × 768, C = A·B --------------------
constexpr int GM = 2048, GN = 3072, GK = 768;
constexpr double kGemmFlops = 2.0 * GM * GN * GK;

void gemm_onednn(benchmark::State& s, DType dt) {
  Buffer a(dt, size_t(GM) * GK), b(dt, size_t(GK) * GN), c(dt, size_t(GM) * GN, 0, 0);
  for (auto _ : loop(s, __func__, dt))
    backend().gemm(dt, false, false, GM, GN, GK, 1.0f, a.get(), GK, b.get(), GN, 0.0f, c.get(), GN);
  counters(s, kGemmFlops, es(dt) * (double(GM) * GK + double(GK) * GN + double(GM) * GN));
  s.SetLabel(hybrid::kernels::cpu::gemm_impl_name(dt, false, false, GM, GN, GK));
}

// Every provider on the same buffers, alternately, each timed on its own: the
// ratios are measured side by side in one run. OpenBLAS is loaded with the core
// type chosen for this CPU (kernels/cpu/openblas.h); bf16 on OpenBLAS converts
// to fp32 first (Debian's build has no bf16 GEMM).
void gemm_providers(benchmark::State& s, DType dt) {
  using hybrid::kernels::cpu::GemmProvider;
  Buffer a(dt, size_t(GM) * GK), b(dt, size_t(GK) * GN), c(dt, size_t(GM) * GN, 0, 0);
  const std::vector<GemmProvider> providers = hybrid::kernels::cpu::usable_gemm_providers(dt);
  std::vector<std::vector<double>> seconds(providers.size());
  const auto run = [&](GemmProvider p) {
    hybrid::kernels::cpu::gemm_on(p, dt, false, false, GM, GN, GK, 1.0f, a.get(), GK, b.get(), GN,
                                  0.0f, c.get(), GN);
  };
  for (GemmProvider p : providers) run(p);  // warm-up: primitives, OpenBLAS's threads
  for (auto _ : s)
    for (size_t i = 0; i < providers.size(); ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      run(providers[i]);
      seconds[i].push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  double best = 0;
  std::vector<double> rates;
  for (auto& t : seconds) {
    std::sort(t.begin(), t.end());
    rates.push_back(kGemmFlops / t[t.size() / 2] / 1e9);
    best = std::max(best, rates.back());
  }
  std::string line;
  for (size_t i = 0; i < providers.size(); ++i) {
    const std::string name(hybrid::kernels::cpu::provider_name(providers[i]));
    s.counters[name + "_GFLOP/s"] = rates[i];
    s.counters[name + "/best"] = rates[i] / best;
    line += name + " " + std::to_string(int(rates[i] + 0.5)) + " GFLOP/s (" +
            std::to_string(int(100 * rates[i] / best + 0.5)) + " % of the best)  ";
  }
  const auto& blas = hybrid::kernels::cpu::openblas::library();
  std::printf("gemm %dx%dx%d %s, medians: %s[oneDNN %s; OpenBLAS core %s, %s]\n", GM, GN, GK,
              std::string(hybrid::kernels::dtype_name(dt)).c_str(), line.c_str(),
              hybrid::kernels::cpu::gemm_impl_name(dt, false, false, GM, GN, GK).c_str(),
              blas.loaded ? blas.core.c_str() : "-", blas.loaded ? blas.core_from.c_str() : "");
}

#define HYBRID_BENCH_DT(fn, ...)                                      \
  BENCHMARK_CAPTURE(fn, fp32, DType::f32 __VA_OPT__(, ) __VA_ARGS__)  \
      ->UseRealTime()                                                 \
      ->Unit(benchmark::kMillisecond);                                \
  BENCHMARK_CAPTURE(fn, bf16, DType::bf16 __VA_OPT__(, ) __VA_ARGS__) \
      ->UseRealTime()                                                 \
      ->Unit(benchmark::kMillisecond)

// qkv (768 → 2304), attention projection (768 → 768), MLP fc (768 → 3072) and proj (3072 → 768).
HYBRID_BENCH_DT(matmul_forward, C, 3 * C);
HYBRID_BENCH_DT(matmul_backward, C, 3 * C);
BENCHMARK_CAPTURE(matmul_forward, fc_fp32, DType::f32, C, 4 * C)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(matmul_forward, proj_fp32, DType::f32, 4 * C, C)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
HYBRID_BENCH_DT(encoder_forward);
HYBRID_BENCH_DT(encoder_backward);
HYBRID_BENCH_DT(layernorm_forward);
HYBRID_BENCH_DT(layernorm_backward);
HYBRID_BENCH_DT(gelu_forward);
HYBRID_BENCH_DT(gelu_backward);
HYBRID_BENCH_DT(attention_forward);
HYBRID_BENCH_DT(attention_backward);
HYBRID_BENCH_DT(residual_forward);
HYBRID_BENCH_DT(cross_entropy_forward);
HYBRID_BENCH_DT(cross_entropy_backward);
HYBRID_BENCH_DT(convert);
HYBRID_BENCH_DT(add);
HYBRID_BENCH_DT(scale);
HYBRID_BENCH_DT(grad_stats);
HYBRID_BENCH_DT(adamw);
BENCHMARK(attention_gemm_threading)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(gemm_onednn, fp32, DType::f32)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(gemm_onednn, bf16, DType::bf16)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(gemm_providers, fp32, DType::f32)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(gemm_providers, bf16, DType::bf16)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
