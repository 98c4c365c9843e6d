// Shared by the CUDA-vs-CPU op tests: one tensor on both backends from the same
// dt-rounded host values, the per-dtype tolerances, and the fixture that skips
// (with the reason) without a usable CUDA device.
//
// Tolerances (per dtype, stated once): fp32 1e-4 (cuBLAS without TF32 vs oneDNN,
// different summation order); fp16 5e-3 (≈ 10 ulp of 2^-11); bf16 3e-2 (≈ 8 ulp
// of 2^-8). Chained ops (attention backward) get 4× that.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "kernels/ops.h"
#include "kernels/registry.h"
#include "reference.h"

namespace hybrid::kernels::test {

inline double tolerance(DType dt) {
  switch (dt) {
    case DType::f32:
      return 1e-4;
    case DType::f16:
      return 5e-3;
    case DType::bf16:
      return 3e-2;
  }
  return 0;
}

// One tensor on both backends, from the same host values.
class Pair {
 public:
  Pair(Backend& cpu, Backend& gpu, DType dt, const std::vector<float>& values)
      : cpu_(cpu), gpu_(gpu), dt_(dt), n_(values.size()), bytes_(n_ * dtype_size(dt)) {
    Buf host(dt, values);
    c_ = cpu.allocate(bytes_ ? bytes_ : 1);
    g_ = gpu.allocate(bytes_ ? bytes_ : 1);
    cpu.copy_from_host(c_, host.data(), bytes_);
    gpu.copy_from_host(g_, host.data(), bytes_);
  }
  Pair(Backend& cpu, Backend& gpu, DType dt, size_t n)
      : Pair(cpu, gpu, dt, std::vector<float>(n, 0.0f)) {}
  ~Pair() {
    cpu_.deallocate(c_, bytes_ ? bytes_ : 1);
    gpu_.deallocate(g_, bytes_ ? bytes_ : 1);
  }
  Pair(const Pair&) = delete;
  void* c() const { return c_; }
  void* g() const { return g_; }
  std::vector<float> cpu_values() const { return read(cpu_, c_); }
  std::vector<float> gpu_values() const { return read(gpu_, g_); }
  double err() const { return rel_err(gpu_values(), cpu_values()); }

 private:
  std::vector<float> read(Backend& b, void* p) const {
    Buf host(dt_, n_);
    b.copy_to_host(host.data(), p, bytes_);
    return host.get();
  }
  Backend& cpu_;
  Backend& gpu_;
  DType dt_;
  size_t n_, bytes_;
  void *c_ = nullptr, *g_ = nullptr;
};

// Raw bytes (int32 tokens, fp32 statistics) on both backends.
template <class T>
class RawPair {
 public:
  RawPair(Backend& cpu, Backend& gpu, const std::vector<T>& v)
      : cpu_(cpu), gpu_(gpu), n_(v.size()) {
    c_ = static_cast<T*>(cpu.allocate(bytes()));
    g_ = static_cast<T*>(gpu.allocate(bytes()));
    cpu.copy_from_host(c_, v.data(), n_ * sizeof(T));
    gpu.copy_from_host(g_, v.data(), n_ * sizeof(T));
  }
  ~RawPair() {
    cpu_.deallocate(c_, bytes());
    gpu_.deallocate(g_, bytes());
  }
  T* c() const { return c_; }
  T* g() const { return g_; }
  std::vector<T> cpu_values() const { return read(cpu_, c_); }
  std::vector<T> gpu_values() const { return read(gpu_, g_); }

 private:
  size_t bytes() const { return n_ ? n_ * sizeof(T) : 1; }
  std::vector<T> read(Backend& b, T* p) const {
    std::vector<T> v(n_);
    b.copy_to_host(v.data(), p, n_ * sizeof(T));
    return v;
  }
  Backend& cpu_;
  Backend& gpu_;
  size_t n_;
  T *c_ = nullptr, *g_ = nullptr;
};

class CudaOps : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    try {
      auto choice = make_backend("cuda", 0);
      gpu_ = std::move(choice.backend);
    } catch (const std::exception& e) {
      GTEST_SKIP() << "no CUDA backend: " << e.what();
    }
    cpu_ = make_cpu_backend();
    if (!gpu_->supports(dt())) GTEST_SKIP() << gpu_->name() << " lacks " << dtype_name(dt());
  }
  DType dt() const { return GetParam(); }
  double tol() const { return tolerance(dt()); }
  Pair pair(const std::vector<float>& v) { return Pair(*cpu_, *gpu_, dt(), v); }
  Pair pair_rand(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    return pair(random_floats(n, seed, lo, hi));
  }

  std::unique_ptr<Backend> cpu_, gpu_;
};

}  // namespace hybrid::kernels::test
