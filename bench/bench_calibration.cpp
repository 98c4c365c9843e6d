// Calibration benchmarks: fixed workloads that measure the machine, not the project.
//
// `hybrid-bench compare --normalize` divides every benchmark's times by its run's
// calibration median, so a machine that is uniformly 20 % slower today (another
// job on the host, a lower clock, a noisier neighbour) does not read as a 20 %
// regression. The calibration therefore must never change when project code does:
// this file includes nothing of hybrid and is built without linking it.
//
//   calibration/compute  single-thread FMA work in L1 (core clock, SIMD throughput)
//
// One calibration only, and a compute-bound one: a memory-bandwidth calibration
// (a 64 MiB streaming read) was tried and dropped; on a shared runner its median
// moved by up to 15 % between runs on its own, and that noise went into every
// normalised benchmark.
//
// `canary/softmax` is not a calibration: an ordinary single-thread workload that
// calls the injected-slowdown hook, so the regression check can be proven end to
// end (scripts/bench-ci-check.sh) even in a suite with no project benchmark yet.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "bench/slowdown.h"

namespace {

// Deterministic, project-independent inputs.
std::vector<float> pattern(std::size_t n, float scale) {
  std::vector<float> v(n);
  uint32_t x = 12345;
  for (auto& f : v) {
    x = x * 1664525u + 1013904223u;  // LCG: same numbers on every machine
    f = scale * (static_cast<float>(x >> 8) / 16777216.0f - 0.5f);
  }
  return v;
}

// 64x64x64 single-precision matrix product, i-k-j order so the inner loop vectorises.
void calibration_compute(benchmark::State& state) {
  constexpr int n = 64;
  const std::vector<float> a = pattern(n * n, 1.0f), b = pattern(n * n, 0.5f);
  std::vector<float> c(n * n);
  for (auto _ : state) {
    std::fill(c.begin(), c.end(), 0.0f);
    for (int i = 0; i < n; ++i) {
      for (int k = 0; k < n; ++k) {
        const float aik = a[i * n + k];
        for (int j = 0; j < n; ++j) c[i * n + j] += aik * b[k * n + j];
      }
    }
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
}

// Row-wise softmax over 16 rows of 1024: exp-heavy, like the project's attention. The
// working set (2 x 64 KiB) stays well inside L2; at the size of L2 (64 rows) its time
// moved with every other tenant's cache use.
void canary_softmax(benchmark::State& state) {
  constexpr int rows = 16, cols = 1024;
  const std::vector<float> x = pattern(rows * cols, 8.0f);
  std::vector<float> y(x.size());
  for (auto _ : hybrid::bench::slowed(state, "canary/softmax")) {
    for (int r = 0; r < rows; ++r) {
      const float* in = &x[r * cols];
      float* out = &y[r * cols];
      float m = in[0];
      for (int j = 1; j < cols; ++j) m = std::max(m, in[j]);
      float sum = 0;
      for (int j = 0; j < cols; ++j) sum += out[j] = std::exp(in[j] - m);
      const float inv = 1.0f / sum;
      for (int j = 0; j < cols; ++j) out[j] *= inv;
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
}

}  // namespace

BENCHMARK(calibration_compute)->Name("calibration/compute");
BENCHMARK(canary_softmax)->Name("canary/softmax");

BENCHMARK_MAIN();
