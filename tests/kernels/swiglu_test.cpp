// swiglu_forward/backward (the Llama family's MLP activation) against the
// double formula silu(gate)·up, finite differences of it, fp16/bf16 storage
// and the "+=" contract.
#include <gtest/gtest.h>

#include "reference.h"

namespace hybrid::kernels {
namespace {

using test::Buf;
using test::Vec;

constexpr int N = 9, I = 40;
constexpr double kTolF32 = 1e-6;  // element-wise: a few ulp (fast_exp is ~2 ulp)
constexpr double kTolFd = 1e-6;   // vs central differences (h = 1e-5) of the double formula

Vec swiglu_ref(const Vec& gu) {
  Vec out(size_t(N) * I);
  for (int r = 0; r < N; ++r)
    for (int c = 0; c < I; ++c) {
      const double g = gu[size_t(r * 2 * I + c)], up = gu[size_t(r * 2 * I + I + c)];
      out[size_t(r * I + c)] = g / (1.0 + std::exp(-g)) * up;
    }
  return out;
}

TEST(SwiGlu, ForwardAndBackwardMatchTheFormula) {
  auto be = make_cpu_backend();
  const auto gu = test::random_floats(size_t(N) * 2 * I, 61, -6.0f, 6.0f);
  const auto dout = test::random_floats(size_t(N) * I, 62);
  std::vector<float> out(size_t(N) * I), dgu(gu.size(), 0.0f);
  be->swiglu_forward(DType::f32, out.data(), gu.data(), N, I);
  EXPECT_LT(test::rel_err(out, swiglu_ref(test::to_double(gu))), kTolF32);

  be->swiglu_backward(DType::f32, dgu.data(), dout.data(), gu.data(), N, I);
  Vec x = test::to_double(gu);
  const Vec R = test::to_double(dout);
  const Vec fd = test::finite_diff(x, [&] { return test::dot(swiglu_ref(x), R); });
  const double e = test::rel_err(dgu, fd);
  std::printf("swiglu backward vs finite differences: %.2e\n", e);
  EXPECT_LT(e, kTolFd);
  const auto once = dgu;
  be->swiglu_backward(DType::f32, dgu.data(), dout.data(), gu.data(), N, I);
  for (size_t i = 0; i < dgu.size(); ++i) EXPECT_FLOAT_EQ(dgu[i], 2 * once[i]) << "+=";
}

TEST(SwiGlu, LowPrecisionMatchesFp32) {
  auto be = make_cpu_backend();
  for (DType dt : {DType::bf16, DType::f16}) {
    const auto gu = test::round_to(dt, test::random_floats(size_t(N) * 2 * I, 63, -6.0f, 6.0f));
    const auto dout = test::round_to(dt, test::random_floats(size_t(N) * I, 64));
    const double tol = dt == DType::bf16 ? 1e-2 : 2e-3;
    std::vector<float> out32(size_t(N) * I), d32(gu.size(), 0.0f);
    be->swiglu_forward(DType::f32, out32.data(), gu.data(), N, I);
    be->swiglu_backward(DType::f32, d32.data(), dout.data(), gu.data(), N, I);
    Buf bgu(dt, gu), bd(dt, dout), out(dt, out32.size()), din(dt, gu.size());
    be->swiglu_forward(dt, out.data(), bgu.data(), N, I);
    be->swiglu_backward(dt, din.data(), bd.data(), bgu.data(), N, I);
    EXPECT_LT(test::rel_err(out.get(), out32), tol) << dtype_name(dt);
    EXPECT_LT(test::rel_err(din.get(), d32), tol) << dtype_name(dt);
  }
}

}  // namespace
}  // namespace hybrid::kernels
