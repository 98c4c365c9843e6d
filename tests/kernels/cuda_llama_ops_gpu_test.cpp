// The Llama family's ops on the CUDA backend against the CPU backend (the
// oracle, itself checked against double references in rmsnorm_test.cpp,
// rope_test.cpp and swiglu_test.cpp), in fp32, fp16 and bf16. Skips (with the
// reason) without a usable CUDA device.
#include <gtest/gtest.h>

#include <vector>

#include "cuda_pair.h"

namespace hybrid::kernels {
namespace {

using test::RawPair;
using test::rel_err;

class CudaLlamaOps : public test::CudaOps {};

TEST_P(CudaLlamaOps, RmsnormForwardBackward) {
  for (int C : {40, 4096}) {
    const int N = 70;
    auto x = pair_rand(size_t(N) * C, 80, -2.0f, 3.0f);
    auto w = pair_rand(size_t(C), 81, 0.5f, 1.5f);
    auto out = pair(std::vector<float>(size_t(N) * C));
    RawPair<float> rstd(*cpu_, *gpu_, std::vector<float>(size_t(N)));
    cpu_->rmsnorm_forward(dt(), out.c(), rstd.c(), x.c(), w.c(), N, C, 1e-6f);
    gpu_->rmsnorm_forward(dt(), out.g(), rstd.g(), x.g(), w.g(), N, C, 1e-6f);
    EXPECT_LT(out.err(), tol()) << "C=" << C;
    EXPECT_LT(rel_err(rstd.gpu_values(), rstd.cpu_values()), 1e-5) << "C=" << C;
    auto dout = pair_rand(size_t(N) * C, 82);
    auto dx = pair_rand(size_t(N) * C, 83);
    auto dw = pair_rand(size_t(C), 84);
    cpu_->rmsnorm_backward(dt(), dx.c(), dw.c(), dout.c(), x.c(), w.c(), rstd.c(), N, C);
    gpu_->rmsnorm_backward(dt(), dx.g(), dw.g(), dout.g(), x.g(), w.g(), rstd.g(), N, C);
    EXPECT_LT(dx.err(), tol()) << "C=" << C;
    EXPECT_LT(dw.err(), tol()) << "C=" << C;
  }
}

TEST_P(CudaLlamaOps, RopeForwardBackwardWithAndWithoutPositions) {
  const int B = 3, T = 37, heads = 6, d = 64, stride = 8 * d, N = B * T;
  std::vector<int32_t> pos(static_cast<size_t>(N));
  for (int r = 0; r < N; ++r) pos[size_t(r)] = (r * 7) % 101;
  RawPair<int32_t> positions(*cpu_, *gpu_, pos);
  for (const bool given : {false, true}) {
    auto x = pair_rand(size_t(N) * stride, 85);
    const int32_t* pc = given ? positions.c() : nullptr;
    const int32_t* pg = given ? positions.g() : nullptr;
    cpu_->rope_forward(dt(), x.c(), pc, N, T, stride, heads, d, 500000.0f);
    gpu_->rope_forward(dt(), x.g(), pg, N, T, stride, heads, d, 500000.0f);
    EXPECT_LT(x.err(), tol()) << "positions given " << given;
    cpu_->rope_backward(dt(), x.c(), pc, N, T, stride, heads, d, 500000.0f);
    gpu_->rope_backward(dt(), x.g(), pg, N, T, stride, heads, d, 500000.0f);
    EXPECT_LT(x.err(), tol()) << "positions given " << given;
  }
}

TEST_P(CudaLlamaOps, SwigluForwardBackward) {
  const int N = 33, I = 1000;
  auto gu = pair_rand(size_t(N) * 2 * I, 86, -6.0f, 6.0f);
  auto out = pair(std::vector<float>(size_t(N) * I));
  cpu_->swiglu_forward(dt(), out.c(), gu.c(), N, I);
  gpu_->swiglu_forward(dt(), out.g(), gu.g(), N, I);
  EXPECT_LT(out.err(), tol());
  auto dout = pair_rand(size_t(N) * I, 87);
  auto dgu = pair_rand(size_t(N) * 2 * I, 88);
  cpu_->swiglu_backward(dt(), dgu.c(), dout.c(), gu.c(), N, I);
  gpu_->swiglu_backward(dt(), dgu.g(), dout.g(), gu.g(), N, I);
  EXPECT_LT(dgu.err(), tol());
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, CudaLlamaOps,
                         ::testing::Values(DType::f32, DType::f16, DType::bf16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace hybrid::kernels
