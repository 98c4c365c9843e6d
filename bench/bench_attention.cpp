// The CPU backend's flash-style attention (kernels/cpu/attention.cpp) side by side
// with the T×T kernel it replaced (kernels/cpu/attention_materialized.h), in one
// run, at GPT-2 124M shapes (C 768, NH 12):
// - attention_side_by_side/B/T: forward and backward of both kernels alternately
//   on the same buffers, each timed on its own (wall clock); the counters are the
//   milliseconds per call and the speed-up flash/T×T of each direction;
// - attention_peak_rss/B/T: each kernel's forward + backward in a fresh process
//   (this executable again, --rss-child=flash|txt), whose peak RSS growth over a
//   warmed-up baseline (inputs allocated, threads and oneDNN started) is what the
//   kernel needs: saved state, per-thread scratch, GEMM scratchpads. Counters in
//   MiB and the ratio T×T/flash;
// - attention_tile_products: the two forward tile products (S = q·kᵀ and O += P·v,
//   64 × 64 × 64) through cpu::gemm and as plain vectorised loops, alternately:
//   the GFLOP/s of each and the ratio gemm/loops, for the choice of cpu::gemm;
// - attention_packed_side_by_side/B/T/doc: forward + backward over rows packed
//   with documents of `doc` tokens (positions) and over full causal rows,
//   alternately: ms of each and the speed-up causal/packed.
//
//   build/bench/bench_attention
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench/suite_main.h"
#include "kernels/cpu/attention_materialized.h"
#include "kernels/cpu/gemm.h"
#include "kernels/ops.h"

namespace {

using hybrid::kernels::Backend;
using hybrid::kernels::DType;
namespace cpu = hybrid::kernels::cpu;

constexpr int C = 768, NH = 12;

Backend& backend() {
  static std::unique_ptr<Backend> be = hybrid::kernels::make_cpu_backend();
  return *be;
}

std::vector<float> values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t x = seed * 2654435761u + 12345u;
  for (auto& f : v) {
    x = x * 1664525u + 1013904223u;
    f = float(x >> 8) / 8388608.0f - 1.0f;
  }
  return v;
}

// Inputs and outputs of one attention call at [B, T], fp32.
struct Tensors {
  Tensors(int B, int T)
      : qkv(values(size_t(B) * T * 3 * C, 1)),
        out(size_t(B) * T * C),
        dout(values(size_t(B) * T * C, 2)),
        dqkv(size_t(B) * T * 3 * C, 0.0f) {}
  std::vector<float> qkv, out, dout, dqkv;
};

// positions: packed documents (see attention_packed_side_by_side), null: one per row.
void run_flash(Tensors& x, std::vector<float>& saved, int B, int T, bool backward,
               const int32_t* positions = nullptr) {
  if (!backward)
    backend().attention_forward(DType::f32, x.out.data(), saved.data(), x.qkv.data(), positions, B,
                                T, C, NH, NH);
  else
    backend().attention_backward(DType::f32, x.dqkv.data(), x.dout.data(), x.qkv.data(),
                                 x.out.data(), saved.data(), positions, B, T, C, NH, NH);
}

void run_txt(Tensors& x, std::vector<float>& saved, int B, int T, bool backward) {
  if (!backward)
    cpu::attention_materialized_forward(DType::f32, x.out.data(), saved.data(), x.qkv.data(), B, T,
                                        C, NH);
  else
    cpu::attention_materialized_backward(DType::f32, x.dqkv.data(), x.dout.data(), x.qkv.data(),
                                         saved.data(), B, T, C, NH);
}

void attention_side_by_side(benchmark::State& s) {
  const int B = int(s.range(0)), T = int(s.range(1));
  Tensors x(B, T);
  std::vector<float> lse(backend().attention_saved_bytes(DType::f32, B, T, C, NH) / 4);
  std::vector<float> P(cpu::attention_materialized_saved_bytes(B, T, NH) / 4);
  using clock = std::chrono::steady_clock;
  double t[4] = {};  // flash fwd, flash bwd, T×T fwd, T×T bwd
  for (auto _ : s) {
    for (int i = 0; i < 4; ++i) {
      const auto t0 = clock::now();
      if (i < 2)
        run_flash(x, lse, B, T, i == 1);
      else
        run_txt(x, P, B, T, i == 3);
      t[i] += std::chrono::duration<double>(clock::now() - t0).count();
    }
  }
  const double ms = 1e3 / double(s.iterations());
  s.counters["flash_fwd_ms"] = t[0] * ms;
  s.counters["flash_bwd_ms"] = t[1] * ms;
  s.counters["txt_fwd_ms"] = t[2] * ms;
  s.counters["txt_bwd_ms"] = t[3] * ms;
  s.counters["speedup_fwd"] = t[2] / t[0];
  s.counters["speedup_bwd"] = t[3] / t[1];
  std::printf(
      "attention B %d T %d fp32: flash fwd %.2f ms bwd %.2f ms; T×T fwd %.2f ms bwd %.2f ms; "
      "speed-up fwd %.2f bwd %.2f\n",
      B, T, t[0] * ms, t[1] * ms, t[2] * ms, t[3] * ms, t[2] / t[0], t[3] / t[1]);
}

// Packed documents against full causal rows, alternately on the same buffers:
// rows of T tokens packed with documents of `doc` tokens (positions given; the
// key tiles before a query block's document are skipped) and the same rows as
// one document each (positions null), forward and backward each timed on its
// own (wall clock). Counters: ms per call of each, and the speed-ups
// causal/packed of forward, backward and both together.
void attention_packed_side_by_side(benchmark::State& s) {
  const int B = int(s.range(0)), T = int(s.range(1)), doc = int(s.range(2));
  Tensors x(B, T);
  std::vector<float> lse(backend().attention_saved_bytes(DType::f32, B, T, C, NH) / 4);
  std::vector<int32_t> positions(size_t(B) * T);
  for (size_t bt = 0; bt < positions.size(); ++bt) positions[bt] = int32_t(bt % size_t(T)) % doc;
  using clock = std::chrono::steady_clock;
  double t[4] = {};  // packed fwd, packed bwd, causal fwd, causal bwd
  for (auto _ : s) {
    for (int i = 0; i < 4; ++i) {
      const auto t0 = clock::now();
      run_flash(x, lse, B, T, i % 2 == 1, i < 2 ? positions.data() : nullptr);
      t[i] += std::chrono::duration<double>(clock::now() - t0).count();
    }
  }
  const double ms = 1e3 / double(s.iterations());
  s.counters["packed_fwd_ms"] = t[0] * ms;
  s.counters["packed_bwd_ms"] = t[1] * ms;
  s.counters["causal_fwd_ms"] = t[2] * ms;
  s.counters["causal_bwd_ms"] = t[3] * ms;
  s.counters["speedup_fwd"] = t[2] / t[0];
  s.counters["speedup_bwd"] = t[3] / t[1];
  s.counters["speedup"] = (t[2] + t[3]) / (t[0] + t[1]);
  std::printf(
      "attention B %d T %d fp32, documents of %d tokens vs one per row: fwd %.2f / %.2f ms, "
      "bwd %.2f / %.2f ms; speed-up fwd %.2f bwd %.2f fwd+bwd %.2f\n",
      B, T, doc, t[0] * ms, t[2] * ms, t[1] * ms, t[3] * ms, t[2] / t[0], t[3] / t[1],
      (t[2] + t[3]) / (t[0] + t[1]));
}

double vm_hwm_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atof(line.c_str() + 6) * 1024.0;  // kB
  return 0.0;
}

// Child process: prints the peak RSS growth of one kernel's forward + backward.
int rss_child(const std::string& kernel, int B, int T) {
  const bool flash = kernel == "flash";
  Tensors warm(1, 1), x(B, T);
  std::vector<float> warm_saved(64);
  for (bool bwd : {false, true})  // threads, oneDNN and its primitive cache start here
    flash ? run_flash(warm, warm_saved, 1, 1, bwd) : run_txt(warm, warm_saved, 1, 1, bwd);
  const double base = vm_hwm_bytes();
  std::vector<float> saved((flash ? backend().attention_saved_bytes(DType::f32, B, T, C, NH)
                                  : cpu::attention_materialized_saved_bytes(B, T, NH)) /
                           4);
  for (bool bwd : {false, true})
    flash ? run_flash(x, saved, B, T, bwd) : run_txt(x, saved, B, T, bwd);
  std::printf("%.0f\n", vm_hwm_bytes() - base);
  return 0;
}

std::string g_self;  // this executable

double child_growth_mib(const char* kernel, int B, int T) {
  const std::string cmd =
      g_self + " --rss-child=" + kernel + " " + std::to_string(B) + " " + std::to_string(T);
  FILE* p = popen(cmd.c_str(), "r");
  double bytes = -1.0;
  if (p == nullptr || std::fscanf(p, "%lf", &bytes) != 1) bytes = -1.0;
  if (p != nullptr) pclose(p);
  return bytes / (1 << 20);
}

void attention_peak_rss(benchmark::State& s) {
  const int B = int(s.range(0)), T = int(s.range(1));
  double flash = 0.0, txt = 0.0;
  for (auto _ : s) {
    flash = child_growth_mib("flash", B, T);
    txt = child_growth_mib("txt", B, T);
  }
  if (flash < 0 || txt < 0) s.SkipWithError("a child process failed");
  s.counters["flash_MiB"] = flash;
  s.counters["txt_MiB"] = txt;
  s.counters["ratio_txt/flash"] = txt / flash;
  std::printf("attention B %d T %d fp32 peak RSS growth: flash %.1f MiB, T×T %.1f MiB (%.0f×)\n", B,
              T, flash, txt, txt / flash);
}

constexpr int kTile = 64, kHs = 64;

// S = q·kᵀ (dot products along hs) and O += S·v (rows of v scaled and added).
void tile_loops(float* S, float* O, const float* q, const float* k, const float* v) {
  for (int i = 0; i < kTile; ++i)
    for (int j = 0; j < kTile; ++j) {
      float d = 0.0f;
#pragma omp simd reduction(+ : d)
      for (int c = 0; c < kHs; ++c) d += q[i * kHs + c] * k[j * kHs + c];
      S[i * kTile + j] = d;
    }
  for (int i = 0; i < kTile; ++i)
    for (int j = 0; j < kTile; ++j) {
      const float p = S[i * kTile + j];
#pragma omp simd
      for (int c = 0; c < kHs; ++c) O[i * kHs + c] += p * v[j * kHs + c];
    }
}

void tile_gemms(float* S, float* O, const float* q, const float* k, const float* v) {
  cpu::gemm(DType::f32, false, true, kTile, kTile, kHs, 1.0f, q, kHs, k, kHs, 0.0f, S, kTile);
  cpu::gemm(DType::f32, false, false, kTile, kHs, kTile, 1.0f, S, kTile, v, kHs, 1.0f, O, kHs);
}

void attention_tile_products(benchmark::State& s) {
  const auto q = values(kTile * kHs, 3), k = values(kTile * kHs, 4), v = values(kTile * kHs, 5);
  std::vector<float> S(kTile * kTile), O(kTile * kHs, 0.0f);
  constexpr int kReps = 200;  // tiles per timed batch
  using clock = std::chrono::steady_clock;
  double t_gemm = 0.0, t_loops = 0.0;
  for (auto _ : s) {
    const auto t0 = clock::now();
    for (int r = 0; r < kReps; ++r) tile_gemms(S.data(), O.data(), q.data(), k.data(), v.data());
    const auto t1 = clock::now();
    for (int r = 0; r < kReps; ++r) tile_loops(S.data(), O.data(), q.data(), k.data(), v.data());
    const auto t2 = clock::now();
    benchmark::DoNotOptimize(O.data());
    t_gemm += std::chrono::duration<double>(t1 - t0).count();
    t_loops += std::chrono::duration<double>(t2 - t1).count();
  }
  const double flops = 4.0 * kTile * kTile * kHs * kReps * double(s.iterations());
  s.counters["gemm_GFLOP/s"] = flops / t_gemm / 1e9;
  s.counters["loops_GFLOP/s"] = flops / t_loops / 1e9;
  s.counters["ratio_gemm/loops"] = t_loops / t_gemm;
  std::printf("attention 64×64×64 tile products: cpu::gemm %.1f GFLOP/s, loops %.1f GFLOP/s\n",
              flops / t_gemm / 1e9, flops / t_loops / 1e9);
}

BENCHMARK(attention_side_by_side)
    ->Args({4, 256})
    ->Args({1, 1024})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
// Documents of 128 and 64 tokens start on key tiles; of 100, inside them; of 1024,
// one per row through positions (what the positions path costs with nothing to skip).
BENCHMARK(attention_packed_side_by_side)
    ->Args({1, 1024, 128})
    ->Args({1, 1024, 100})
    ->Args({1, 1024, 64})
    ->Args({1, 1024, 1024})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(attention_tile_products)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(attention_peak_rss)->Args({4, 1024})->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strncmp(argv[1], "--rss-child=", 12) == 0)
    return rss_child(argv[1] + 12, std::atoi(argv[2]), std::atoi(argv[3]));
  g_self = "/proc/self/exe";
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n > 0) g_self = std::string(buf, size_t(n));
  return hybrid::bench::run_suite(argc, argv);
}
