// What the CPU kernel benchmarks (bench_kernels) share: the backend, buffers of
// deterministic values, the rate counters, and the benchmark loop with the
// injected-slowdown hook.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/slowdown.h"
#include "kernels/ops.h"

namespace hybrid::bench {

// The CPU backend every benchmark of the process runs on.
inline kernels::Backend& backend() {
  static std::unique_ptr<kernels::Backend> be = kernels::make_cpu_backend();
  return *be;
}

// A backend buffer of n elements of dt, filled with deterministic values in [lo, hi).
class Buffer {
 public:
  Buffer(kernels::DType dt, size_t n, float lo = -1.0f, float hi = 1.0f, uint32_t seed = 1)
      : bytes_(n * kernels::dtype_size(dt)), ptr_(backend().allocate(bytes_)) {
    std::vector<float> v(n);
    uint32_t x = seed * 2654435761u + 12345u;
    for (auto& f : v) {
      x = x * 1664525u + 1013904223u;
      f = lo + (hi - lo) * float(x >> 8) / 16777216.0f;
    }
    backend().convert(dt, ptr_, kernels::DType::f32, v.data(), n);
  }
  ~Buffer() { backend().deallocate(ptr_, bytes_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* get() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  size_t bytes_;
  void* ptr_;
};

// n deterministic token ids below `bound`.
inline std::vector<int32_t> tokens(int n, int bound) {
  std::vector<int32_t> t(n);
  uint32_t x = 7;
  for (auto& v : t) {
    x = x * 1664525u + 1013904223u;
    v = int32_t((x >> 8) % uint32_t(bound));
  }
  return t;
}

// FLOP/s and bytes/s from the work of one iteration.
inline void counters(benchmark::State& s, double flops, double bytes) {
  s.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  s.counters["bytes/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate,
                                             benchmark::Counter::OneK::kIs1024);
}

inline double es(kernels::DType dt) { return double(kernels::dtype_size(dt)); }

// The benchmark loop with the injected-slowdown hook (bench/slowdown.h), matched
// against "<op>/<dtype>" (e.g. HYBRID_BENCH_SLOWDOWN="^layernorm_forward/fp32=0.30").
inline SlowedLoop loop(benchmark::State& s, const char* op, kernels::DType dt) {
  return slowed(s, std::string(op) + "/" + std::string(kernels::dtype_name(dt)));
}

}  // namespace hybrid::bench
