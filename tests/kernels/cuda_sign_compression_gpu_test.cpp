// The 1-bit compression ops on the CUDA backend against the CPU backend (the
// oracle: the compressed all-reduce built on its ops equals the NumPy
// reference of DeepSpeed's algorithm, tests/mpi/compressed_all_reduce_cases.h):
// a group of tensors across several tiles, one tensor shorter than its padding,
// for 2 and 4 ranks' chunking; then the 1-bit optimizers' steps per gradient
// dtype: OneBitAdam's and 0/1 Adam's elementwise ones, 1-bit LAMB's segment ones.
// Skips (with the reason) without a usable CUDA device.
//
// Tolerances: the packed signs and the values before each norm are computed
// with the same fp32 operations in the same order, so signs and bytes must be
// equal; only the norms' fp64 summation order differs, so scales agree to
// 1e-6 relative and residuals to 1e-6 of their scale. Elementwise steps: 1e-6;
// segment statistics (fp32 partials on the GPU, fp64 in order on the CPU): 1e-5.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "cuda_pair.h"
#include "reference.h"

namespace hybrid::kernels {
namespace {

using test::random_floats;
using test::RawPair;

class CudaSignCompression : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    try {
      gpu_ = make_backend("cuda", 0).backend;
    } catch (const std::exception& e) {
      GTEST_SKIP() << "no CUDA backend: " << e.what();
    }
    cpu_ = make_cpu_backend();
  }
  int world() const { return GetParam(); }
  std::unique_ptr<Backend> cpu_, gpu_;
};

double largest_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0.0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(double(a[i]) - double(b[i])));
  return d;
}

// n rounded up so that W chunks pack into whole bytes (the engine's
// compressed_padded_size: a multiple of W·lcm(W, 8)).
size_t padded_size(size_t n, int world) {
  const size_t w = size_t(world), multiple = w * (w * 8 / std::gcd(w, size_t(8)));
  return (n + multiple - 1) / multiple * multiple;
}

// A group on both backends: values, errors (random, as after earlier calls).
struct GroupPair {
  std::vector<std::unique_ptr<RawPair<float>>> data, worker, server;
  std::vector<SignTensor> on_cpu, on_gpu;
  size_t block = 0;

  GroupPair(Backend& cpu, Backend& gpu, const std::vector<size_t>& sizes, int world) {
    for (size_t k = 0; k < sizes.size(); ++k) {
      const size_t padded = padded_size(sizes[k], world);
      const auto seed = uint32_t(100 + 10 * k);
      data.push_back(std::make_unique<RawPair<float>>(cpu, gpu, random_floats(sizes[k], seed)));
      worker.push_back(
          std::make_unique<RawPair<float>>(cpu, gpu, random_floats(padded, seed + 1, -0.1f, 0.1f)));
      server.push_back(std::make_unique<RawPair<float>>(
          cpu, gpu, random_floats(padded / size_t(world), seed + 2, -0.1f, 0.1f)));
      on_cpu.push_back({data[k]->c(), sizes[k], padded, worker[k]->c(), server[k]->c(), block});
      on_gpu.push_back({data[k]->g(), sizes[k], padded, worker[k]->g(), server[k]->g(), block});
      block += padded / size_t(world) / 8;
    }
  }
};

const std::vector<size_t> kSizes = {1, 1000, 5000, 2048};

TEST_P(CudaSignCompression, EveryPhaseMatchesTheCpu) {
  const int w = world();
  GroupPair g(*cpu_, *gpu_, kSizes, w);
  const SignGroup cg{g.on_cpu.data(), g.on_cpu.size(), w, g.block};
  const SignGroup gg{g.on_gpu.data(), g.on_gpu.size(), w, g.block};
  const size_t count = kSizes.size(), wb = size_t(w) * g.block;
  RawPair<uint8_t> send(*cpu_, *gpu_, std::vector<uint8_t>(wb, 0));
  RawPair<float> scales(*cpu_, *gpu_, std::vector<float>(count, 0.0f));
  cpu_->sign_compress_worker(cg, send.c(), scales.c());
  gpu_->sign_compress_worker(gg, send.g(), scales.g());
  EXPECT_EQ(send.gpu_values(), send.cpu_values()) << "worker signs";
  const auto cs = scales.cpu_values(), gs = scales.gpu_values();
  for (size_t k = 0; k < count; ++k) {
    EXPECT_NEAR(gs[k], cs[k], 1e-6 * cs[k]) << "worker scale " << k;
    EXPECT_LE(largest_difference(g.worker[k]->gpu_values(), g.worker[k]->cpu_values()),
              1e-6 * cs[k])
        << "worker error " << k;
  }
  // The server phase on what W ranks might send: random signs and scales.
  std::vector<uint8_t> bytes(wb);
  for (size_t i = 0; i < wb; ++i) bytes[i] = uint8_t((i * 37 + 11) % 251);
  RawPair<uint8_t> received(*cpu_, *gpu_, bytes);
  RawPair<float> all_scales(*cpu_, *gpu_, random_floats(size_t(w) * count, 7, 0.01f, 1.0f));
  RawPair<uint8_t> signs(*cpu_, *gpu_, std::vector<uint8_t>(g.block, 0));
  cpu_->sign_compress_server(cg, received.c(), all_scales.c(), signs.c(), scales.c());
  gpu_->sign_compress_server(gg, received.g(), all_scales.g(), signs.g(), scales.g());
  EXPECT_EQ(signs.gpu_values(), signs.cpu_values()) << "server signs";
  const auto cs2 = scales.cpu_values(), gs2 = scales.gpu_values();
  for (size_t k = 0; k < count; ++k) {
    EXPECT_NEAR(gs2[k], cs2[k], 1e-6 * cs2[k]) << "server scale " << k;
    EXPECT_LE(largest_difference(g.server[k]->gpu_values(), g.server[k]->cpu_values()),
              1e-6 * cs2[k])
        << "server error " << k;
  }
  cpu_->sign_decompress(cg, received.c(), all_scales.c());
  gpu_->sign_decompress(gg, received.g(), all_scales.g());
  for (size_t k = 0; k < count; ++k)
    EXPECT_EQ(g.data[k]->gpu_values(), g.data[k]->cpu_values()) << "result " << k;
}

INSTANTIATE_TEST_SUITE_P(Ranks, CudaSignCompression, ::testing::Values(2, 4),
                         [](const auto& info) { return "world" + std::to_string(info.param); });

class CudaOneBitSteps : public test::CudaOps {};

TEST_P(CudaOneBitSteps, MomentumFrozenVarianceAndZeroOneSyncMatchTheCpu) {
  const size_t n = 70001;
  auto grad = pair_rand(n, 31);
  RawPair<float> m(*cpu_, *gpu_, random_floats(n, 32, -0.1f, 0.1f));
  RawPair<float> v(*cpu_, *gpu_, random_floats(n, 33, 0.0f, 0.01f));
  RawPair<float> master(*cpu_, *gpu_, random_floats(n, 34));
  RawPair<float> acc(*cpu_, *gpu_, random_floats(n, 35, -0.01f, 0.01f));
  auto params = pair(std::vector<float>(n, 0.0f));
  cpu_->momentum_update(0.9f, m.c(), dt(), grad.c(), 0.5f, n);
  gpu_->momentum_update(0.9f, m.g(), dt(), grad.g(), 0.5f, n);
  EXPECT_LE(largest_difference(m.gpu_values(), m.cpu_values()), 1e-6);
  MomentParams p;
  p.lr = 1e-3f, p.eps = 1e-8f, p.weight_decay = 0.01f;
  for (float* accumulator_c : {static_cast<float*>(nullptr), acc.c()}) {
    float* accumulator_g = accumulator_c ? acc.g() : nullptr;
    cpu_->frozen_variance_step(p, master.c(), m.c(), v.c(), accumulator_c, dt(), params.c(), n);
    gpu_->frozen_variance_step(p, master.g(), m.g(), v.g(), accumulator_g, dt(), params.g(), n);
    EXPECT_LE(largest_difference(master.gpu_values(), master.cpu_values()), 1e-6);
    EXPECT_LE(largest_difference(acc.gpu_values(), acc.cpu_values()), 1e-6);
    EXPECT_LE(params.err(), tol());
  }
  cpu_->zero_one_sync_begin(master.c(), acc.c(), v.c(), p.eps, n);
  gpu_->zero_one_sync_begin(master.g(), acc.g(), v.g(), p.eps, n);
  EXPECT_LE(largest_difference(master.gpu_values(), master.cpu_values()), 1e-6);
  EXPECT_LE(largest_difference(acc.gpu_values(), acc.cpu_values()), 1e-6);
  cpu_->zero_one_sync_end(master.c(), m.c(), acc.c(), v.c(), p.eps, 3e-3f, dt(), params.c(), n);
  gpu_->zero_one_sync_end(master.g(), m.g(), acc.g(), v.g(), p.eps, 3e-3f, dt(), params.g(), n);
  EXPECT_LE(largest_difference(master.gpu_values(), master.cpu_values()), 1e-6);
  EXPECT_LE(largest_difference(m.gpu_values(), m.cpu_values()), 1e-6);
  EXPECT_EQ(acc.gpu_values(), std::vector<float>(n, 0.0f));
  EXPECT_LE(params.err(), tol());
}

// 1-bit LAMB's segment ops on three tensors, one longer than a block's share.
TEST_P(CudaOneBitSteps, OneBitLambSegmentOpsMatchTheCpu) {
  const std::vector<int64_t> bounds = {0, 3, 40000, 40100};
  const auto n = size_t(bounds.back());
  const std::vector<float> scales = {0.5f, 2.0f, 1.25f};
  auto grad = pair_rand(n, 41);
  RawPair<float> m(*cpu_, *gpu_, random_floats(n, 42, -0.1f, 0.1f));
  RawPair<float> out(*cpu_, *gpu_, std::vector<float>(n, 0.0f));
  cpu_->onebit_lamb_momentum(0.9f, m.c(), dt(), grad.c(), 0.5f, bounds.data(), 3, scales.data(),
                             out.c());
  gpu_->onebit_lamb_momentum(0.9f, m.g(), dt(), grad.g(), 0.5f, bounds.data(), 3, scales.data(),
                             out.g());
  EXPECT_LE(largest_difference(out.gpu_values(), out.cpu_values()), 1e-6);
  std::vector<double> cs(3, 1.0), gs(3, 1.0);  // the ops add into the sums
  cpu_->segment_sum_squares(m.c(), bounds.data(), 3, cs.data());
  gpu_->segment_sum_squares(m.g(), bounds.data(), 3, gs.data());
  for (size_t s = 0; s < 3; ++s) EXPECT_NEAR(gs[s], cs[s], 1e-5 * cs[s]) << "segment " << s;
  RawPair<float> v(*cpu_, *gpu_, random_floats(n, 43, 0.0f, 0.01f));
  RawPair<float> fresh(*cpu_, *gpu_, random_floats(n, 44, 0.0f, 0.01f));
  RawPair<float> master(*cpu_, *gpu_, random_floats(n, 45));
  MomentParams p;
  p.beta1 = 0.9f, p.beta2 = 0.999f, p.eps = 1e-8f, p.weight_decay = 0.01f;
  std::vector<double> cstats(9, 0.0), gstats(9, 0.0);
  cpu_->onebit_lamb_refresh(p, out.c(), bounds.data(), 3, scales.data(), m.c(), v.c(), fresh.c(),
                            master.c(), cstats.data());
  gpu_->onebit_lamb_refresh(p, out.g(), bounds.data(), 3, scales.data(), m.g(), v.g(), fresh.g(),
                            master.g(), gstats.data());
  EXPECT_LE(largest_difference(m.gpu_values(), m.cpu_values()), 1e-6);
  EXPECT_LE(largest_difference(fresh.gpu_values(), fresh.cpu_values()), 1e-6);
  for (size_t k = 0; k < 9; ++k) EXPECT_NEAR(gstats[k], cstats[k], 1e-5 * cstats[k]) << k;
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, CudaOneBitSteps,
                         ::testing::Values(DType::f32, DType::f16, DType::bf16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace hybrid::kernels
