// Training-step throughput against the best GEMM provider's rate, side by side in
// one run (issue targets: the fp32 step reaches >= 80 % of the best fp32 GEMM rate;
// the bf16 step is >= 1.6x faster than fp32 where the CPU has bf16 GEMMs), and a
// roofline per op class against that GEMM peak and the memory bandwidth.
//
//   build/bench/bench_train_step                      # GPT-2 124M (L=12 C=768 H=12 V=50257), B=4,
//   T=256 build/bench/bench_train_step --benchmark_filter=small   # the CI-sized step
//   build/bench/bench_train_step --config my_ds_config.json [--steps 20]
//       # a user's own config (one process, synthetic tokens), N optimizer steps:
//       # tokens/s, FLOP/s, MFU against the GEMM rate measured in the same run
//       # (the CPU's achievable peak), and peak memory as counters
//
// Model FLOPs per step: (6·N + 6·L·C·T)·B·T over wall time, N = the parameters
// that multiply activations (CausalLM::matmul_params).
//
// The Llama of GPT-2 124M's size (train_step/llama_124M) against the GPT-2
// step measured in the same run: target >= 80 % of its GFLOP/s.
// Medians of per-iteration wall times; the summary printed at the end states
// each figure and its ratio to the reference measured in the same process.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <random>

#include "base/statistics.h"
#include "bench/slowdown.h"
#include "bench/suite_main.h"
#include "engine/engine.h"
#include "engine/trainer.h"
#include "kernels/cpu/gemm.h"
#include "kernels/ops.h"
#include "profiler/event.h"

namespace {

using namespace hybrid;
using kernels::DType;

std::map<std::string, std::vector<double>> g_seconds;  // per benchmark, per iteration
std::map<std::string, double> g_flops;                 // FLOPs per iteration

engine::Config gpt2_config(int L, int C, int H, int V, int T, int B, DType dt) {
  nlohmann::json j = {
      {"train_micro_batch_size_per_gpu", B},
      {"gradient_accumulation_steps", 1},
      {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 1e-4}, {"weight_decay", 0.1}}}}},
      {"hybrid",
       {{"model",
         {{"type", "gpt2"},
          {"n_layer", L},
          {"n_embd", C},
          {"n_head", H},
          {"vocab_size", V},
          {"seq_len", T}}},
        {"data", "synthetic"}}}};
  if (dt == DType::bf16) j["bf16"] = {{"enabled", true}};
  if (dt == DType::f16) j["fp16"] = {{"enabled", true}};
  return engine::parse_config(j, 1);
}

// A Llama of GPT-2 124M's size: 12 layers, width 768, 12 heads, 4 key/value
// heads, SwiGLU 2048, vocabulary 32000, untied (bench/peers/pytorch_llama_step.py).
engine::Config llama_124m_config(DType dt) {
  auto j = gpt2_config(12, 768, 12, 32000, 256, 4, dt).raw;
  j["hybrid"]["model"] = {{"type", "llama"},     {"n_layer", 12},  {"n_embd", 768},
                          {"n_head", 12},        {"n_kv_head", 4}, {"intermediate_size", 2048},
                          {"vocab_size", 32000}, {"seq_len", 256}, {"tie_embeddings", false}};
  return engine::parse_config(j, 1);
}

// The roofline: one more step with the tracer on, its time, FLOPs and bytes per op
// class (the type of each leaf module, plus the optimizer), against the GEMM peak
// and the memory bandwidth measured in the same run.
struct OpClass {
  double seconds = 0, flops = 0, bytes = 0;
};
std::map<std::string, std::map<std::string, OpClass>> g_roofline;  // benchmark → class

// FLOPs from the modules' own formulas (the FLOPs profiler's). Bytes are the least
// the op must move: its activations written in forward and read back in backward
// (each counted as read and write), its parameters read once per pass and their
// gradients written once; the optimizer streams 32 bytes per parameter (AdamW:
// gradient, master, m, v read; master, m, v written; the parameter copy).
template <class Step>
std::map<std::string, OpClass> profile_op_classes(Engine& e, const Step& step) {
  auto& tracer = e.tracer();
  tracer.drain();
  tracer.set_enabled(true);
  step();
  tracer.set_enabled(false);
  const auto& cfg = e.config();
  const int B = cfg.train_micro_batch_size_per_gpu, T = cfg.seq_len();
  const double es = double(kernels::dtype_size(cfg.param_dtype()));
  const auto& modules = e.module_tree().modules();
  std::map<std::string, OpClass> classes;
  for (const auto& ev : tracer.drain()) {
    const bool pass = ev.category == profiler::Category::forward ||
                      ev.category == profiler::Category::backward ||
                      ev.category == profiler::Category::recompute;
    if (ev.category == profiler::Category::optimizer) {
      classes["optimizer"].seconds += ev.dur_ns * 1e-9;
      continue;
    }
    if (!pass || ev.module_id < 0 || size_t(ev.module_id) >= modules.size()) continue;
    const auto* m = modules[size_t(ev.module_id)];
    if (!m->children().empty()) continue;  // containers: their leaves are counted
    OpClass& c = classes[m->type()];
    const bool fwd = ev.category != profiler::Category::backward;
    const double params = double(m->own_param_count()) * es;
    c.seconds += ev.dur_ns * 1e-9;
    c.flops += double(fwd ? m->forward_flops(B, T) : m->backward_flops(B, T));
    c.bytes += 2.0 * double(m->activation_bytes()) + (fwd ? params : 2 * params);
  }
  classes["optimizer"].bytes = 32.0 * double(e.param_count());
  return classes;
}

// Memory bandwidth: a parallel copy of 256 MiB (read + write), median of 5.
double memory_bandwidth() {
  const size_t n = size_t(64) << 20;  // floats
  std::vector<float> a(n, 1.0f), b(n, 0.0f);
  std::vector<double> secs;
  for (int r = 0; r < 6; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < int64_t(n); ++i) b[size_t(i)] = a[size_t(i)];
    if (r > 0)  // the first pass faults the pages in
      secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * double(n) * sizeof(float) / base::median(secs);
}

// One optimizer step per iteration: every micro-step of the accumulation, then step().
void run_steps(benchmark::State& state, const std::string& name, const engine::Config& cfg) {
  EngineOptions opts;
  opts.quiet = true;
  auto e = initialize(cfg, make_model(cfg), std::move(opts));
  const size_t n = size_t(cfg.train_micro_batch_size_per_gpu) * size_t(cfg.seq_len());
  std::mt19937 rng(1);
  std::vector<int32_t> in(n), tgt(n);
  for (size_t i = 0; i < n; ++i) in[i] = tgt[i] = int32_t(rng() % uint32_t(cfg.model.vocab_size));
  auto step = [&] {
    for (int m = 0; m < cfg.gradient_accumulation_steps; ++m) {
      e->forward(in, tgt);
      e->backward();
    }
    e->step();
  };
  step();  // warm-up: first touches of every buffer
  const double flops = model_flops_per_step(cfg, e->model().matmul_params(), 1);
  for (auto _ : hybrid::bench::slowed(state, name)) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    g_seconds[name].push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  g_flops[name] = flops;
  g_roofline[name] = profile_op_classes(*e, step);
  state.counters["FLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["tokens/s"] = benchmark::Counter(double(n) * cfg.gradient_accumulation_steps,
                                                  benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_memory_bytes"] = double(e->allocator().stats().total_peak);
}

// The reference GEMM on every provider, alternately (gemm/.../fp32/onednn, .../openblas).
void gemm_rate(benchmark::State& state, const std::string& name, DType dt) {
  auto be = kernels::make_cpu_backend();
  const int M = 2048, N = 3072, K = 768;
  const size_t d = kernels::dtype_size(dt);
  void* A = be->allocate(size_t(M) * K * d);
  void* B = be->allocate(size_t(K) * N * d);
  void* C = be->allocate(size_t(M) * N * d);
  be->zero(A, size_t(M) * K * d);
  be->zero(B, size_t(K) * N * d);
  const auto providers = kernels::cpu::usable_gemm_providers(dt);
  const auto run = [&](kernels::cpu::GemmProvider p) {
    kernels::cpu::gemm_on(p, dt, false, false, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
  };
  for (auto p : providers) run(p);  // warm-up
  for (auto _ : state)
    for (auto p : providers) {
      const std::string key = name + "/" + std::string(kernels::cpu::provider_name(p));
      const auto t0 = std::chrono::steady_clock::now();
      run(p);
      g_seconds[key].push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      g_flops[key] = 2.0 * M * N * K;
    }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * M * N * K * double(providers.size()),
                                                benchmark::Counter::kIsIterationInvariantRate);
  be->deallocate(A, 0);
  be->deallocate(B, 0);
  be->deallocate(C, 0);
}

double rate(const std::string& name) {
  const double m = base::median(g_seconds[name]);
  return m > 0 ? g_flops[name] / m : 0.0;
}

// The fastest provider's rate of a reference GEMM, and its name.
std::pair<double, std::string> best_gemm(const std::string& name) {
  std::pair<double, std::string> best{0.0, ""};
  for (auto p : kernels::cpu::kGemmProviders) {
    const std::string key = name + "/" + std::string(kernels::cpu::provider_name(p));
    if (g_seconds.count(key) && rate(key) > best.first) best = {rate(key), key};
  }
  return best;
}

void print_roofline(const std::string& name, double gemm_peak, double bandwidth) {
  if (!g_roofline.count(name) || gemm_peak <= 0) return;
  std::printf("\nroofline of %s (one traced step; GEMM peak %.1f GFLOP/s, memory %.1f GB/s):\n",
              name.c_str(), gemm_peak / 1e9, bandwidth / 1e9);
  std::printf("  %-16s %10s %7s %10s %8s %9s %8s  %s\n", "op class", "ms", "share", "GFLOP/s",
              "% peak", "GB/s", "% bw", "bound by");
  double total = 0;
  for (const auto& [cls, c] : g_roofline[name]) total += c.seconds;
  for (const auto& [cls, c] : g_roofline[name]) {
    if (c.seconds <= 0) continue;
    const double f = c.flops / c.seconds, b = c.bytes / c.seconds;
    const double fp = 100 * f / gemm_peak, bp = 100 * b / bandwidth;
    std::printf("  %-16s %10.1f %6.1f%% %10.1f %7.1f%% %9.2f %7.1f%%  %s\n", cls.c_str(),
                1e3 * c.seconds, 100 * c.seconds / total, f / 1e9, fp, b / 1e9, bp,
                fp >= bp ? "compute" : "memory");
  }
}

void summary() {
  auto line = [](const char* what, double gflops, double ms) {
    std::printf("  %-34s %9.1f GFLOP/s  %10.1f ms (median)\n", what, gflops / 1e9, ms);
  };
  std::printf("\nsummary (medians, measured side by side in this run):\n");
  for (const auto& [name, secs] : g_seconds)
    line(name.c_str(), rate(name), 1e3 * base::median(secs));
  const auto [g32, g32_name] = best_gemm("gemm/2048x3072x768/fp32");
  const auto [gbf, gbf_name] = best_gemm("gemm/2048x3072x768/bf16");
  const double bandwidth = memory_bandwidth();
  for (const char* model : {"gpt2_124M", "small"}) {
    const std::string f32 = std::string("train_step/") + model + "/fp32",
                      bf = std::string("train_step/") + model + "/bf16";
    if (g_seconds.count(f32) && g32 > 0)
      std::printf(
          "%s fp32 step: %.1f GFLOP/s = %.1f %% of the best fp32 GEMM rate (%s; target >= 80 %%)\n",
          model, rate(f32) / 1e9, 100 * rate(f32) / g32, g32_name.c_str());
    if (g_seconds.count(bf) && gbf > 0)
      std::printf("%s bf16 step: %.1f GFLOP/s = %.1f %% of the best bf16 GEMM rate (%s)\n", model,
                  rate(bf) / 1e9, 100 * rate(bf) / gbf, gbf_name.c_str());
    if (g_seconds.count(f32) && g_seconds.count(bf))
      std::printf(
          "%s bf16 step speed-up over fp32: %.2fx (target >= 1.6x where the CPU has bf16 GEMMs; "
          "the best bf16 GEMM here runs at %.2fx the best fp32 rate)\n",
          model, base::median(g_seconds[f32]) / base::median(g_seconds[bf]),
          g32 > 0 ? gbf / g32 : 0.0);
    print_roofline(f32, g32, bandwidth);
    print_roofline(bf, gbf, bandwidth);
  }
  const std::string llama = "train_step/llama_124M/fp32", gpt2 = "train_step/gpt2_124M/fp32";
  if (g_seconds.count(llama) && g_seconds.count(gpt2))
    std::printf(
        "llama_124M fp32 step: %.1f GFLOP/s, %.0f ms = %.1f %% of the GPT-2 124M step's GFLOP/s "
        "in this run (%.1f; target >= 80 %%)\n",
        rate(llama) / 1e9, 1e3 * base::median(g_seconds[llama]), 100 * rate(llama) / rate(gpt2),
        rate(gpt2) / 1e9);
  print_roofline(llama, g32, bandwidth);
}

}  // namespace

// The user's config from --config FILE [--steps N], removed from argv before
// Google Benchmark parses the rest. Bad input exits 2 naming what is wrong.
struct UserConfig {
  std::string path;
  int steps = 10;
};

UserConfig take_user_config(int& argc, char** argv) {
  UserConfig u;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const std::string& flag) -> std::string {
      if (a.rfind(flag + "=", 0) == 0) return a.substr(flag.size() + 1);
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_train_step: %s needs a value\n", flag.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--config" || a.rfind("--config=", 0) == 0) {
      u.path = value("--config");
    } else if (a == "--steps" || a.rfind("--steps=", 0) == 0) {
      const std::string v = value("--steps");
      try {
        u.steps = std::stoi(v);
      } catch (const std::exception&) {
        u.steps = 0;
      }
      if (u.steps < 1) {
        std::fprintf(stderr, "bench_train_step: --steps must be a positive integer, got '%s'\n",
                     v.c_str());
        std::exit(2);
      }
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  return u;
}

void user_summary(const std::string& name, const engine::Config& cfg) {
  if (!g_seconds.count(name)) return;
  const auto [peak, gemm] = best_gemm(std::string("gemm/2048x3072x768/") +
                                      (cfg.param_dtype() == DType::bf16 ? "bf16" : "fp32"));
  const double ms = 1e3 * base::median(g_seconds[name]);
  const double tokens =
      double(cfg.train_micro_batch_size_per_gpu) * cfg.gradient_accumulation_steps * cfg.seq_len();
  std::printf("%s: %.1f ms/step (median of %zu), %.0f tokens/s, %.1f GFLOP/s", name.c_str(), ms,
              g_seconds[name].size(), tokens / (ms / 1e3), rate(name) / 1e9);
  if (peak > 0)
    std::printf(", MFU %.1f %% of the %s GEMM rate measured in this run (%.1f GFLOP/s)",
                100 * rate(name) / peak, gemm.c_str(), peak / 1e9);
  std::printf("\n");
}

int main(int argc, char** argv) {
  const UserConfig user = take_user_config(argc, argv);
  std::optional<engine::Config> user_cfg;
  std::string user_name;
  if (!user.path.empty()) {
    try {
      user_cfg = engine::load_config(user.path, 1);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_train_step: %s\n", e.what());
      return 2;
    }
    user_name = "config/" + std::filesystem::path(user.path).stem().string();
    const engine::Config cfg = *user_cfg;
    benchmark::RegisterBenchmark(user_name.c_str(),
                                 [=](benchmark::State& s) { run_steps(s, user_name, cfg); })
        ->Iterations(user.steps)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  for (DType dt : {DType::f32, DType::bf16}) {
    const std::string tag(kernels::dtype_name(dt));
    const std::string gemm = "gemm/2048x3072x768/" + tag;
    // With a user config: its step and the GEMM rate it is measured against only.
    if (user_cfg && (user_cfg->param_dtype() == DType::bf16) != (dt == DType::bf16)) continue;
    benchmark::RegisterBenchmark(gemm.c_str(), [=](benchmark::State& s) { gemm_rate(s, gemm, dt); })
        ->Iterations(10)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    if (user_cfg) continue;
    const std::string big = "train_step/gpt2_124M/" + tag;
    benchmark::RegisterBenchmark(big.c_str(),
                                 [=](benchmark::State& s) {
                                   run_steps(s, big, gpt2_config(12, 768, 12, 50257, 256, 4, dt));
                                 })
        ->Iterations(3)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    if (dt == DType::f32) {
      const std::string llama = "train_step/llama_124M/" + tag;
      benchmark::RegisterBenchmark(
          llama.c_str(), [=](benchmark::State& s) { run_steps(s, llama, llama_124m_config(dt)); })
          ->Iterations(3)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
    const std::string small = "train_step/small/" + tag;
    benchmark::RegisterBenchmark(
        small.c_str(),
        [=](benchmark::State& s) { run_steps(s, small, gpt2_config(2, 256, 4, 4096, 128, 4, dt)); })
        ->MinTime(0.5)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  return hybrid::bench::run_suite(argc, argv, [&] {
    summary();
    if (user_cfg) user_summary(user_name, *user_cfg);
  });
}
