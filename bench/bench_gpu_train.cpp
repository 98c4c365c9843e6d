// GPT-2 124M training throughput on one GPU: tokens/s and MFU, with a GEMM
// of the model's own shape measured side by side as the reference.
//
//   build/bench/bench_gpu_train                          # bf16 and fp32, B = 16, T = 1024
//   build/bench/bench_gpu_train --benchmark_filter=bf16
//   HYBRID_GPU_BENCH_BATCH=8 build/bench/bench_gpu_train # another micro-batch
//
// Model: L=12, C=768, H=12, V=50257 (padded to 50304), T=1024, ZeRO stage 0,
// one rank, AdamW. Model FLOPs per token: 6·N + 6·L·C·T (N = parameters, the
// causal attention term as llm.c counts it); MFU = model FLOP/s ÷ the device's
// peak dense FLOP/s for the dtype (bf16: tensor cores; fp32: TF32 stays off,
// so the fp32 CUDA-core peak), from the table below, matched on the name
// cudaGetDeviceProperties reports; the peak used is printed. Target: >= 40 %
// MFU in bf16.
// Reference: cuBLASLt (through the backend's gemm) on the MLP's c_fc shape,
// (B·T) × 4C × C in the same dtype; the summary gives the step's model FLOP/s
// as a fraction of it.
// Timing: each step (or GEMM) is followed by a synchronisation of the compute
// stream, and its wall time is the iteration's manual time.
// Without a CUDA device (or in a CPU-only build) the program says why and exits 0.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "base/launcher_env.h"
#include "base/statistics.h"
#include "bench/suite_main.h"
#include "engine/engine.h"
#include "engine/trainer.h"
#include "kernels/registry.h"

namespace {

using namespace hybrid;
using kernels::DType;

constexpr int kL = 12, kC = 768, kH = 12, kV = 50257, kT = 1024;

struct DevicePeak {
  const char* match;    // substring of the device name
  const char* exclude;  // must not occur (nullptr: none)
  const char* label;
  double bf16;  // dense tensor-core FLOP/s
  double fp32;  // CUDA-core FLOP/s (no TF32)
};

// Vendor datasheet figures, dense (no sparsity).
constexpr DevicePeak kPeaks[] = {
    {"H200", nullptr, "H200 (SXM)", 989.4e12, 66.9e12},
    {"H100", "PCIe", "H100 SXM", 989.4e12, 66.9e12},
    {"H100", nullptr, "H100 PCIe", 756.0e12, 51.2e12},
    {"A100", nullptr, "A100", 312.0e12, 19.5e12},
    {"L40S", nullptr, "L40S", 362.1e12, 91.6e12},
};

const DevicePeak* peak_for(const std::string& name) {
  for (const auto& p : kPeaks)
    if (name.find(p.match) != std::string::npos &&
        (!p.exclude || name.find(p.exclude) == std::string::npos))
      return &p;
  return nullptr;
}

int micro_batch() {
  return base::env_int("HYBRID_GPU_BENCH_BATCH", 1).value_or(16);  // throws naming a bad value
}

engine::Config gpt2_124m(DType dt, int B) {
  nlohmann::json j = {
      {"train_micro_batch_size_per_gpu", B},
      {"gradient_accumulation_steps", 1},
      {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 6e-4}, {"weight_decay", 0.1}}}}},
      {"hybrid",
       {{"model",
         {{"type", "gpt2"},
          {"n_layer", kL},
          {"n_embd", kC},
          {"n_head", kH},
          {"vocab_size", kV},
          {"seq_len", kT}}},
        {"data", "synthetic"},
        {"device", "cuda"}}}};
  if (dt == DType::bf16) j["bf16"] = {{"enabled", true}};
  return engine::parse_config(j, 1);
}

std::map<std::string, std::vector<double>> g_seconds;
std::map<std::string, double> g_flops;  // per iteration
std::string g_device;

double rate(const std::string& name) {
  const double m = base::median(g_seconds[name]);
  return m > 0 ? g_flops[name] / m : 0.0;
}

void train_steps(benchmark::State& state, const std::string& name, DType dt) {
  const int B = micro_batch();
  const auto cfg = gpt2_124m(dt, B);
  EngineOptions opts;
  opts.quiet = true;
  std::unique_ptr<Engine> e;
  try {
    e = initialize(cfg, make_model(cfg), std::move(opts));
  } catch (const std::exception& err) {
    state.SkipWithError(err.what());
    return;
  }
  g_device = e->backend().name();
  const size_t n = size_t(B) * kT;
  std::mt19937 rng(1);
  std::vector<int32_t> in(n), tgt(n);
  for (size_t i = 0; i < n; ++i) in[i] = int32_t(rng() % kV), tgt[i] = int32_t(rng() % kV);
  auto step = [&] {
    e->forward(in, tgt);
    e->backward();
    e->step();
    e->backend().synchronize();
  };
  step();  // warm-up: cuBLASLt plans, caching allocator, first touches
  step();
  const double flops = model_flops_per_step(cfg, e->param_count(), 1);
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(s);
    g_seconds[name].push_back(s);
  }
  g_flops[name] = flops;
  state.counters["FLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["tokens/s"] =
      benchmark::Counter(double(n), benchmark::Counter::kIsIterationInvariantRate);
}

void gemm_reference(benchmark::State& state, const std::string& name, DType dt) {
  auto choice = kernels::make_backend("cuda", 0);
  auto& be = *choice.backend;
  const int M = micro_batch() * kT, N = 4 * kC, K = kC;
  const size_t d = kernels::dtype_size(dt);
  void* A = be.allocate(size_t(M) * K * d);
  void* W = be.allocate(size_t(N) * K * d);
  void* C = be.allocate(size_t(M) * N * d);
  be.zero(A, size_t(M) * K * d);
  be.zero(W, size_t(N) * K * d);
  auto run = [&] {
    be.matmul_forward(dt, C, A, W, nullptr, M, K, N);
    be.synchronize();
  };
  run();
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(s);
    g_seconds[name].push_back(s);
  }
  g_flops[name] = 2.0 * M * N * K;
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * M * N * K, benchmark::Counter::kIsIterationInvariantRate);
  be.deallocate(A, 0);
  be.deallocate(W, 0);
  be.deallocate(C, 0);
}

void summary() {
  const int B = micro_batch();
  const DevicePeak* peak = peak_for(g_device);
  std::printf(
      "\nsummary: GPT-2 124M, B=%d, T=%d, on %s (medians, measured side by side in this run)\n", B,
      kT, g_device.c_str());
  if (peak)
    std::printf("peak used for MFU: %s, bf16 dense %.1f TFLOP/s, fp32 %.1f TFLOP/s\n", peak->label,
                peak->bf16 / 1e12, peak->fp32 / 1e12);
  else
    std::printf(
        "peak used for MFU: none (device not in the table: H200, H100 SXM/PCIe, A100, L40S)\n");
  for (DType dt : {DType::bf16, DType::f32}) {
    const std::string tag(kernels::dtype_name(dt));
    const std::string step = "train/gpt2_124M/" + tag, gemm = "gemm/c_fc/" + tag;
    if (!g_seconds.count(step)) continue;
    const double r = rate(step), tokens = double(B) * kT / base::median(g_seconds[step]);
    std::printf("%s: %.1f ms/step, %.0f tokens/s, %.1f TFLOP/s model", tag.c_str(),
                1e3 * base::median(g_seconds[step]), tokens, r / 1e12);
    if (peak) {
      const double p = dt == DType::bf16 ? peak->bf16 : peak->fp32;
      std::printf(" = %.1f %% MFU%s", 100 * r / p, dt == DType::bf16 ? " (target >= 40 %)" : "");
    }
    if (g_seconds.count(gemm) && rate(gemm) > 0)
      std::printf("; the c_fc GEMM runs at %.1f TFLOP/s, the step at %.1f %% of it",
                  rate(gemm) / 1e12, 100 * r / rate(gemm));
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    kernels::make_backend("cuda", 0);
  } catch (const std::exception& e) {
    std::printf("bench_gpu_train: skipped: %s\n", e.what());
    return 0;
  }
  for (DType dt : {DType::bf16, DType::f32}) {
    const std::string tag(kernels::dtype_name(dt));
    const std::string gemm = "gemm/c_fc/" + tag;
    benchmark::RegisterBenchmark(gemm.c_str(),
                                 [=](benchmark::State& s) { gemm_reference(s, gemm, dt); })
        ->Iterations(20)
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime();
    const std::string step = "train/gpt2_124M/" + tag;
    benchmark::RegisterBenchmark(step.c_str(),
                                 [=](benchmark::State& s) { train_steps(s, step, dt); })
        ->Iterations(dt == DType::bf16 ? 10 : 4)
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime();
  }
  return hybrid::bench::run_suite(argc, argv, summary);
}
