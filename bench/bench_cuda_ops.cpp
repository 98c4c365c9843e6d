// CUDA op benchmarks at GPT-2 124M shapes (B = 8 or 16, T = 1024, C = 768,
// NH = 12, V = 50257 padded to 50304), bf16 storage unless named otherwise.
//
// Timing: CUDA events around each call on the compute stream, reported through
// manual time (state.SetIterationTime), so the figure is device time, not host
// launch time. Each iteration also times a reference side by side on the same
// stream, and the benchmark reports the ratio:
//   GEMMs      vs cublasGemmEx (classic cuBLAS, default heuristics): ratio = our FLOP/s ÷ its
//   FLOP/s attention  vs a dense cuBLASLt GEMM of 8192×2304×768: ratio = attention FLOP/s ÷ dense
//   GEMM FLOP/s memory-bound ops vs cudaMemcpyAsync moving the same bytes: ratio = our bandwidth ÷
//   copy bandwidth
// Counters: FLOP/s and bytes/s (rates over the event-measured time) and ref_ratio.
// Without a CUDA device (or in a CPU-only build) the program says so and exits 0.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/registry.h"

#if HYBRID_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "bench/cuda_op_timing.h"
#include "bench/suite_main.h"
#include "kernels/cuda/cuda_backend.h"
#include "profiler/flops.h"

namespace {

using hybrid::bench::cublas_ref;
using hybrid::bench::cuda_type;
using hybrid::bench::DevBuf;
using hybrid::bench::Env;
using hybrid::bench::g_env;
using hybrid::bench::measure;
using hybrid::bench::memcpy_ref;
using hybrid::kernels::AdamWParams;
using hybrid::kernels::DType;

constexpr int kT = 1024, kC = 768, kNH = 12, kV = 50257, kVp = 50304;

// A memory-bound op, its forward or backward as the benchmark's second argument
// says, against a copy of the same bytes.
void measure_memory_bound(benchmark::State& st, const std::function<void()>& forward,
                          const std::function<void()>& backward, double bytes) {
  measure(st, st.range(1) != 0 ? backward : forward, memcpy_ref(size_t(bytes)), 0, bytes);
}

size_t es(DType dt) { return hybrid::kernels::dtype_size(dt); }

void BM_matmul_forward(benchmark::State& st) {
  const DType dt = DType(st.range(0));
  const int M = int(st.range(1)) * kT, K = int(st.range(2)), N = int(st.range(3));
  DevBuf inp(size_t(M) * K * es(dt)), w(size_t(N) * K * es(dt)), bias(size_t(N) * es(dt)),
      out(size_t(M) * N * es(dt), false);
  measure(
      st, [&] { g_env->b->matmul_forward(dt, out.p, inp.p, w.p, bias.p, M, K, N); },
      cublas_ref(dt, out.p, inp.p, w.p, M, K, N),
      hybrid::profiler::flops::matmul_forward(M, K, N, true), 0);
  st.SetLabel(std::string(hybrid::kernels::dtype_name(dt)) + " ref=cublasGemmEx");
}

void BM_matmul_backward(benchmark::State& st) {
  const DType dt = DType(st.range(0));
  const int M = int(st.range(1)) * kT, K = int(st.range(2)), N = int(st.range(3));
  DevBuf inp(size_t(M) * K * es(dt)), w(size_t(N) * K * es(dt)), dout(size_t(M) * N * es(dt)),
      dinp(size_t(M) * K * es(dt), false), dw(size_t(N) * K * es(dt), false),
      db(size_t(N) * es(dt), false), scratch(size_t(M) * K * es(dt), false);
  // Reference: the two GEMMs of a backward through classic cuBLAS (no bias reduction).
  auto ref = [&, dt] {
    const float one = 1.0f;
    cublasSetStream(g_env->cublas, g_env->b->compute_stream());
    cublasGemmEx(g_env->cublas, CUBLAS_OP_N, CUBLAS_OP_N, K, M, N, &one, w.p, cuda_type(dt), K,
                 dout.p, cuda_type(dt), N, &one, scratch.p, cuda_type(dt), K, CUBLAS_COMPUTE_32F,
                 CUBLAS_GEMM_DEFAULT);
    cublasGemmEx(g_env->cublas, CUBLAS_OP_N, CUBLAS_OP_T, K, N, M, &one, inp.p, cuda_type(dt), K,
                 dout.p, cuda_type(dt), N, &one, dw.p, cuda_type(dt), K, CUBLAS_COMPUTE_32F,
                 CUBLAS_GEMM_DEFAULT);
  };
  measure(
      st, [&] { g_env->b->matmul_backward(dt, dinp.p, dw.p, db.p, dout.p, inp.p, w.p, M, K, N); },
      ref, hybrid::profiler::flops::matmul_backward(M, K, N, true), 0);
  st.SetLabel(std::string(hybrid::kernels::dtype_name(dt)) + " ref=2x cublasGemmEx");
}

void BM_matmul_gelu_fused(benchmark::State& st) {
  const DType dt = DType::bf16;
  const int M = int(st.range(0)) * kT, K = kC, N = 4 * kC;
  DevBuf inp(size_t(M) * K * 2), w(size_t(N) * K * 2), bias(size_t(N) * 2),
      pre(size_t(M) * N * 2, false), out(size_t(M) * N * 2, false);
  // Reference: the unfused pair (matmul with bias epilogue, then the GELU kernel).
  auto ref = [&] {
    g_env->b->matmul_forward(dt, pre.p, inp.p, w.p, bias.p, M, K, N);
    g_env->b->gelu_forward(dt, out.p, pre.p, size_t(M) * N);
  };
  measure(
      st, [&] { g_env->b->matmul_forward_gelu(dt, out.p, pre.p, inp.p, w.p, bias.p, M, K, N); },
      ref, hybrid::profiler::flops::matmul_forward(M, K, N, true), 0);
  st.SetLabel("bf16 ref=matmul+gelu unfused");
}

void BM_attention(benchmark::State& st) {
  const DType dt = DType::bf16;
  const bool backward = st.range(1) != 0;
  const int B = int(st.range(0));
  const size_t n = size_t(B) * kT * kC;
  DevBuf qkv(3 * n * 2), out(n * 2, false), dout(n * 2), dqkv(3 * n * 2, false),
      saved(g_env->b->attention_saved_bytes(dt, B, kT, kC, kNH), false);
  g_env->b->attention_forward(dt, out.p, saved.p, qkv.p, nullptr, B, kT, kC, kNH, kNH);
  const int M = B * kT;
  DevBuf gi(size_t(M) * kC * 2), gw(size_t(3 * kC) * kC * 2), go(size_t(M) * 3 * kC * 2, false);
  auto ref = [&] { g_env->b->matmul_forward(dt, go.p, gi.p, gw.p, nullptr, M, kC, 3 * kC); };
  const auto scale =
      [&](double f) {  // attention FLOPs per dense-GEMM FLOP, so ref_ratio compares FLOP/s
        return f / double(hybrid::profiler::flops::matmul_forward(M, kC, 3 * kC, false));
      };
  const double flops =
      double(backward ? hybrid::profiler::flops::attention_backward(B, kT, kC, kNH, true)
                      : hybrid::profiler::flops::attention_forward(B, kT, kC, kNH, true));
  if (backward)
    measure(
        st,
        [&] {
          g_env->b->attention_backward(dt, dqkv.p, dout.p, qkv.p, out.p, saved.p, nullptr, B, kT,
                                       kC, kNH, kNH);
        },
        ref, flops, 0);
  else
    measure(
        st,
        [&] {
          g_env->b->attention_forward(dt, out.p, saved.p, qkv.p, nullptr, B, kT, kC, kNH, kNH);
        },
        ref, flops, 0);
  st.counters["ref_ratio"].value *= scale(flops);
  st.SetLabel("bf16 causal FLOPs; ref=dense GEMM 8192x2304x768 FLOP/s");
}

void BM_layernorm(benchmark::State& st) {
  const DType dt = DType::bf16;
  const bool backward = st.range(1) != 0;
  const int N = int(st.range(0)) * kT;
  const size_t n = size_t(N) * kC;
  DevBuf x(n * 2), w(kC * 2), bias(kC * 2), out(n * 2, false), dout(n * 2), dx(n * 2, false),
      dw(kC * 2, false), db(kC * 2, false), mean(size_t(N) * 4, false), rstd(size_t(N) * 4, false);
  g_env->b->layernorm_forward(dt, out.p, mean.as<float>(), rstd.as<float>(), x.p, w.p, bias.p, N,
                              kC);
  const double bytes = backward ? double(n) * 2 * 4 : double(n) * 2 * 2;  // bwd: x, dout, dx r/w
  measure_memory_bound(
      st,
      [&] {
        g_env->b->layernorm_forward(dt, out.p, mean.as<float>(), rstd.as<float>(), x.p, w.p, bias.p,
                                    N, kC);
      },
      [&] {
        g_env->b->layernorm_backward(dt, dx.p, dw.p, db.p, dout.p, x.p, w.p, mean.as<float>(),
                                     rstd.as<float>(), N, kC);
      },
      bytes);
  st.SetLabel("bf16 ref=memcpy same bytes");
}

void BM_cross_entropy(benchmark::State& st) {
  const DType dt = DType::bf16;
  const bool backward = st.range(1) != 0;
  const int N = int(st.range(0)) * kT;
  const size_t n = size_t(N) * kVp;
  DevBuf logits(n * 2), losses(size_t(N) * 4, false), lse(size_t(N) * 4, false),
      targets(size_t(N) * 4, false);
  g_env->b->cross_entropy_forward(dt, losses.as<float>(), lse.as<float>(), logits.p,
                                  targets.as<int32_t>(), N, kV, kVp);
  const double bytes = backward ? double(n) * 2 * 2 : double(n) * 2;
  measure_memory_bound(
      st,
      [&] {
        g_env->b->cross_entropy_forward(dt, losses.as<float>(), lse.as<float>(), logits.p,
                                        targets.as<int32_t>(), N, kV, kVp);
      },
      [&] {
        g_env->b->cross_entropy_backward(dt, logits.p, logits.p, lse.as<float>(),
                                         targets.as<int32_t>(), 1.0f / N, N, kV, kVp);
      },
      bytes);
  st.SetLabel("bf16 in-place backward; ref=memcpy same bytes");
}

void BM_gelu(benchmark::State& st) {
  const DType dt = DType::bf16;
  const bool backward = st.range(1) != 0;
  const size_t n = size_t(st.range(0)) * kT * 4 * kC;
  DevBuf x(n * 2), out(n * 2, false), dout(n * 2);
  const double bytes = backward ? double(n) * 2 * 4 : double(n) * 2 * 2;
  measure_memory_bound(
      st, [&] { g_env->b->gelu_forward(dt, out.p, x.p, n); },
      [&] { g_env->b->gelu_backward(dt, out.p, x.p, dout.p, n); }, bytes);
  st.SetLabel("bf16 ref=memcpy same bytes");
}

void BM_residual(benchmark::State& st) {
  const size_t n = size_t(st.range(0)) * kT * kC;
  DevBuf a(n * 2), b(n * 2), out(n * 2, false);
  const double bytes = double(n) * 2 * 3;
  measure(
      st, [&] { g_env->b->residual_forward(DType::bf16, out.p, a.p, b.p, n); },
      memcpy_ref(size_t(bytes)), 0, bytes);
  st.SetLabel("bf16 ref=memcpy same bytes");
}

void BM_encoder(benchmark::State& st) {
  const DType dt = DType::bf16;
  const int B = int(st.range(0));
  const size_t n = size_t(B) * kT * kC;
  std::vector<int32_t> tokens(size_t(B) * kT);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t((i * 7919) % kV);
  DevBuf tok(tokens.size() * 4, false), wte(size_t(kVp) * kC * 2), wpe(size_t(kT) * kC * 2),
      out(n * 2, false), dwte(size_t(kVp) * kC * 2, false), dwpe(size_t(kT) * kC * 2, false);
  g_env->b->copy_from_host(tok.p, tokens.data(), tokens.size() * 4);
  const double bytes = double(n) * 2 * 3;
  measure_memory_bound(
      st,
      [&] {
        g_env->b->encoder_forward(dt, out.p, tok.as<int32_t>(), nullptr, wte.p, wpe.p, B, kT, kC);
      },
      [&] {
        g_env->b->encoder_backward(dt, dwte.p, dwpe.p, out.p, tok.as<int32_t>(), nullptr, B, kT,
                                   kC);
      },
      bytes);
  st.SetLabel("bf16 ref=memcpy same bytes");
}

constexpr size_t kParams = 124'475'904;  // GPT-2 124M with the padded vocabulary

void BM_adamw(benchmark::State& st) {
  const size_t n = kParams;
  DevBuf master(n * 4), m(n * 4, false), v(n * 4, false), grad(n * 2), param(n * 2, false);
  AdamWParams p;
  p.lr = 6e-4f;
  p.weight_decay = 0.1f;
  const double bytes =
      double(n) * (4 * 2 * 3 + 2 + 2);  // master/m/v read+write, grad read, param write
  measure(
      st,
      [&] {
        g_env->b->adamw(p, master.as<float>(), m.as<float>(), v.as<float>(), DType::bf16, grad.p,
                        1.0f, DType::bf16, param.p, n);
      },
      memcpy_ref(size_t(bytes)), 0, bytes);
  st.SetLabel("124M params, bf16 grads/params; ref=memcpy same bytes");
}

void BM_grad_stats(benchmark::State& st) {
  const size_t n = kParams;
  DevBuf grad(n * 2);
  const double bytes = double(n) * 2;
  measure(
      st, [&] { benchmark::DoNotOptimize(g_env->b->grad_stats(DType::bf16, grad.p, n)); },
      memcpy_ref(size_t(bytes)), 0, bytes);
  st.SetLabel("124M bf16; includes the result's copy to the host; ref=memcpy same bytes");
}

void register_all() {
  const auto f32 = int64_t(DType::f32), bf16 = int64_t(DType::bf16), f16 = int64_t(DType::f16);
  auto cfg = [](benchmark::internal::Benchmark* b) {
    b->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(0.2);
  };
  cfg(benchmark::RegisterBenchmark("cuda/matmul_forward", BM_matmul_forward)
          ->ArgNames({"dt", "B", "K", "N"})
          ->Args({bf16, 8, kC, 3 * kC})
          ->Args({bf16, 8, kC, 4 * kC})
          ->Args({bf16, 8, 4 * kC, kC})
          ->Args({bf16, 8, kC, kVp})
          ->Args({bf16, 16, kC, 3 * kC})
          ->Args({f16, 8, kC, 3 * kC})
          ->Args({f32, 8, kC, 3 * kC}));
  cfg(benchmark::RegisterBenchmark("cuda/matmul_backward", BM_matmul_backward)
          ->ArgNames({"dt", "B", "K", "N"})
          ->Args({bf16, 8, kC, 3 * kC})
          ->Args({bf16, 8, kC, 4 * kC}));
  cfg(benchmark::RegisterBenchmark("cuda/matmul_gelu_fused", BM_matmul_gelu_fused)
          ->ArgNames({"B"})
          ->Arg(8));
  cfg(benchmark::RegisterBenchmark("cuda/attention", BM_attention)
          ->ArgNames({"B", "bwd"})
          ->Args({8, 0})
          ->Args({8, 1})
          ->Args({16, 0}));
  cfg(benchmark::RegisterBenchmark("cuda/layernorm", BM_layernorm)
          ->ArgNames({"B", "bwd"})
          ->Args({8, 0})
          ->Args({8, 1}));
  cfg(benchmark::RegisterBenchmark("cuda/cross_entropy", BM_cross_entropy)
          ->ArgNames({"B", "bwd"})
          ->Args({8, 0})
          ->Args({8, 1}));
  cfg(benchmark::RegisterBenchmark("cuda/gelu", BM_gelu)
          ->ArgNames({"B", "bwd"})
          ->Args({8, 0})
          ->Args({8, 1}));
  cfg(benchmark::RegisterBenchmark("cuda/residual", BM_residual)->ArgNames({"B"})->Arg(8));
  cfg(benchmark::RegisterBenchmark("cuda/encoder", BM_encoder)
          ->ArgNames({"B", "bwd"})
          ->Args({8, 0})
          ->Args({8, 1}));
  cfg(benchmark::RegisterBenchmark("cuda/adamw", BM_adamw));
  cfg(benchmark::RegisterBenchmark("cuda/grad_stats", BM_grad_stats));
}

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  const std::unique_ptr<Env> env = Env::open(why);
  if (!env) {
    std::printf("bench_cuda_ops: skipped: %s\n", why.c_str());
    return 0;
  }
  g_env = env.get();
  std::printf("bench_cuda_ops on %s\n", env->b->name().c_str());
  register_all();
  const int rc = hybrid::bench::run_suite(argc, argv);
  g_env = nullptr;
  return rc;
}

#else

int main() {
  std::printf("bench_cuda_ops: skipped: this build has no CUDA backend (HYBRID_CUDA=OFF)\n");
  return 0;
}

#endif
