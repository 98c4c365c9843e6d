// Generation with a key/value cache on GPT-2 124M (random weights: speed does
// not depend on them), against the bounds measured in the same run (issue 29):
//   - decode at batch 1 against reading the weights and the cache once per
//     token at the read bandwidth measured here (target >= 80 %), with fp32
//     and with bf16 weights;
//   - batch 8 decode's tokens/s against batch 1's (target >= 5x);
//   - prefill's GFLOP/s against the training forward's at the same shape
//     (target >= 70 %).
//
//   build/bench/bench_generate                   # GPT-2 124M, prompt 128, 32 new tokens
//   build/bench/bench_generate --benchmark_filter=small   # the CI-sized model
//
// PyTorch's decode of the same model for the README's ratio:
// bench/peers/pytorch_gpt2_decode.py (run beside this one, same threads).
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>

#include "base/statistics.h"
#include "bench/suite_main.h"
#include "engine/engine.h"

namespace {

using namespace hybrid;
using kernels::DType;

struct Shape {
  int L, C, H, V, T;
};
constexpr Shape k124M{12, 768, 12, 50257, 1024};
constexpr Shape kSmall{2, 128, 4, 1024, 256};
constexpr int kPrompt = 128, kNew = 32;

std::unique_ptr<Engine> engine_for(const Shape& s, DType dt, int micro_batch) {
  nlohmann::json j = {{"train_micro_batch_size_per_gpu", micro_batch},
                      {"hybrid",
                       {{"model",
                         {{"type", "gpt2"},
                          {"n_layer", s.L},
                          {"n_embd", s.C},
                          {"n_head", s.H},
                          {"vocab_size", s.V},
                          {"seq_len", s.T}}}}}};
  if (dt == DType::bf16) j["bf16"] = {{"enabled", true}};
  const auto cfg = engine::parse_config(j);
  EngineOptions o;
  o.quiet = true;
  return initialize(cfg, make_model(cfg), std::move(o));
}

struct Figures {
  std::vector<double> tpot_ms, prefill_ms, forward_ms;
  std::vector<int> threads;  // per decode step: the threads it ran on (decode_threads.h)
  // The read bandwidth probed before each iteration on one thread and on all.
  std::vector<double> bw_one, bw_all;
  double weight_bytes = 0, cache_bytes = 0, prefill_flops = 0;
  int batch = 1;
};
std::map<std::string, Figures> g_figures;

std::vector<std::vector<int>> prompts(int batch, int V) {
  std::vector<std::vector<int>> p(static_cast<size_t>(batch), std::vector<int>(kPrompt));
  for (int b = 0; b < batch; ++b)
    for (int t = 0; t < kPrompt; ++t) p[size_t(b)][size_t(t)] = (b * 131 + t * 7) % V;
  return p;
}

// The probe's 512 MiB, 2 MiB-aligned and advised to transparent huge pages as
// the engine's weights are (kernels/cpu/cpu_backend.cpp): with 4 KiB pages the
// probe read slower than a decode step could, and the bound was too lenient.
const float* probe_buffer(size_t n) {
  static float* a = [n] {
    const size_t bytes = n * sizeof(float);
    auto* p = static_cast<float*>(std::aligned_alloc(size_t(2) << 20, bytes));
    madvise(p, bytes, MADV_HUGEPAGE);
    std::fill(p, p + n, 1.0f);
    return p;
  }();
  return a;
}

// Read bandwidth: a sum over 512 MiB with 16 running sums (loads, not adds, are
// the limit), median of 5 after a warm-up pass, on one thread and on all of
// them: the faster of the two is what a decode step could reach (on a shared
// machine a second thread can slow a static split down).
double read_bandwidth(int threads) {
  const size_t n = size_t(128) << 20;  // floats
  const float* a = probe_buffer(n);
  std::vector<double> secs;
  for (int r = 0; r < 6; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    float total = 0.0f;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
      float acc[16] = {};
#pragma omp for schedule(static)
      for (int64_t i = 0; i < int64_t(n / 16); ++i)
        for (int k = 0; k < 16; ++k) acc[k] += a[size_t(i) * 16 + size_t(k)];
      for (float x : acc) total += x;
    }
    benchmark::DoNotOptimize(total);
    if (r > 0)
      secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return double(n) * sizeof(float) / base::median(secs);
}

// One generate call per iteration: the prefill of each prompt, then kNew − 1
// decode steps; the read bandwidth is probed before each one, so that the bound
// is measured beside the steps it bounds on a machine whose load changes.
void decode(benchmark::State& state, const std::string& name, const Shape& s, DType dt, int batch) {
  auto e = engine_for(s, dt, 1);
  engine::GenerationParams p;
  p.max_new_tokens = kNew;
  const auto ps = prompts(batch, s.V);
  Figures& f = g_figures[name];
  f.batch = batch;
  f.weight_bytes = double(e->model().matmul_params()) * double(kernels::dtype_size(dt));
  // Keys and values of every layer read once per step, at the mean position.
  f.cache_bytes = 2.0 * s.L * (kPrompt + kNew / 2.0) * s.C * double(kernels::dtype_size(dt));
  f.prefill_flops = 2.0 * double(e->model().matmul_params()) * kPrompt;
  for (auto _ : state) {
    state.PauseTiming();
    f.bw_one.push_back(read_bandwidth(1));
    f.bw_all.push_back(read_bandwidth(omp_get_max_threads()));
    state.ResumeTiming();
    const auto r = e->generate(ps, p);
    f.tpot_ms.insert(f.tpot_ms.end(), r.tpot_ms.begin(), r.tpot_ms.end());
    f.threads.insert(f.threads.end(), r.decode_threads.begin(), r.decode_threads.end());
    f.prefill_ms.push_back(r.ttft_ms[0]);
  }
  // The training forward at the prefill's shape: one micro-batch [1, kPrompt].
  if (batch == 1 && dt == DType::f32) {
    auto t = engine_for({s.L, s.C, s.H, s.V, kPrompt}, dt, 1);
    std::vector<int32_t> in(kPrompt, 1), tgt(kPrompt, 2);
    for (int i = 0; i < 4; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      t->forward(in, tgt);
      f.forward_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  state.counters["tpot_ms"] = base::median(f.tpot_ms);
}

// How the decode steps split between all threads and one, each count's median.
void print_thread_split(const std::string& name, const Figures& f) {
  std::map<int, std::vector<double>> by_count;
  for (size_t i = 0; i < f.tpot_ms.size() && i < f.threads.size(); ++i)
    by_count[f.threads[i]].push_back(f.tpot_ms[i]);
  std::string split;
  for (const auto& [threads, ms] : by_count)
    split += fmt::format("{}{} on {} thread(s) (median {:.2f} ms)", split.empty() ? "" : ", ",
                         ms.size(), threads, base::median(ms));
  std::printf("%s: steps %s\n", name.c_str(), split.c_str());
}

void summary() {
  if (g_figures.empty()) return;
  std::printf(
      "\nsummary (medians; the read bandwidth probed on 1 and %d threads before each "
      "iteration, the faster)\n",
      omp_get_max_threads());
  std::map<std::string, double> tokens_per_s;
  for (const auto& [name, f] : g_figures) {
    const double tpot = base::median(f.tpot_ms);
    const double one = base::median(f.bw_one), all = base::median(f.bw_all);
    const double bw = std::max(one, all);  // the faster bounds a decode step
    const double bound = 1e3 * (f.weight_bytes + f.batch * f.cache_bytes) / bw;
    tokens_per_s[name] = 1e3 * f.batch / tpot;
    std::printf(
        "%s: %.2f ms/token step, %.1f tokens/s; bound %.2f ms (weights %.0f MB + cache at "
        "%.1f GB/s; 1 thread %.1f, all %.1f): %.0f %% of the bound\n",
        name.c_str(), tpot, tokens_per_s[name], bound, f.weight_bytes / 1e6, bw / 1e9, one / 1e9,
        all / 1e9, 100 * bound / tpot);
    print_thread_split(name, f);
    if (!f.forward_ms.empty()) {
      const double prefill = f.prefill_flops / (base::median(f.prefill_ms) / 1e3);
      const double forward = f.prefill_flops / (base::median(f.forward_ms) / 1e3);
      std::printf(
          "%s: prefill of %d tokens %.1f GFLOP/s, the training forward %.1f GFLOP/s: "
          "%.0f %%\n",
          name.c_str(), kPrompt, prefill / 1e9, forward / 1e9, 100 * prefill / forward);
    }
  }
  for (const char* size : {"124M", "small"}) {
    const std::string b1 = std::string("decode/") + size + "/fp32/b1";
    const std::string b8 = std::string("decode/") + size + "/fp32/b8";
    if (tokens_per_s.count(b1) && tokens_per_s.count(b8))
      std::printf("batch 8 decode (%s): %.1fx the tokens/s of batch 1\n", size,
                  tokens_per_s[b8] / tokens_per_s[b1]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (const auto& [size, shape] : {std::pair{"124M", k124M}, std::pair{"small", kSmall}})
    for (const auto& [dt, batch] :
         {std::pair{DType::f32, 1}, std::pair{DType::bf16, 1}, std::pair{DType::f32, 8}}) {
      const std::string name = std::string("decode/") + size + "/" +
                               (dt == DType::f32 ? "fp32" : "bf16") + "/b" + std::to_string(batch);
      // Copies: clang 14 (the fuzz build's) does not capture structured bindings.
      const Shape sh = shape;
      const DType d = dt;
      const int b = batch;
      benchmark::RegisterBenchmark(name.c_str(),
                                   [=](benchmark::State& st) { decode(st, name, sh, d, b); })
          ->Iterations(3)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  return hybrid::bench::run_suite(argc, argv, summary);
}
