// gelu_forward/backward (tanh approximation, vectorised fast_tanh) against the
// double reference (std::tanh), finite differences, fp16/bf16 and "+=".
#include <gtest/gtest.h>

#include "reference.h"

namespace hybrid::kernels {
namespace {

using test::Buf;
using test::Vec;

constexpr size_t kN = 50000;      // > one chunk and above the parallel threshold
constexpr double kTolF32 = 2e-6;  // fast_tanh/fast_exp are within a few ulp
constexpr double kTolFd = 1e-5;

TEST(Gelu, ForwardMatchesNaive) {
  // Wide range: the tanh clamp (|u| > 9) and the cancellation near 0 are both hit.
  const auto x = test::random_floats(kN, 41, -12.0f, 12.0f);
  std::vector<float> out(kN);
  make_cpu_backend()->gelu_forward(DType::f32, out.data(), x.data(), kN);
  Vec ref(kN);
  for (size_t i = 0; i < kN; ++i) ref[i] = test::gelu_ref(x[i]);
  const double err = test::rel_err(out, ref);
  std::printf("gelu forward rel err %.2e\n", err);
  EXPECT_LT(err, kTolF32);
  // Small inputs, error relative to their own scale.
  const auto xs = test::random_floats(1000, 42, -1e-3f, 1e-3f);
  std::vector<float> os(xs.size());
  make_cpu_backend()->gelu_forward(DType::f32, os.data(), xs.data(), xs.size());
  Vec rs(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) rs[i] = test::gelu_ref(xs[i]);
  EXPECT_LT(test::rel_err(os, rs), kTolF32);
}

TEST(Gelu, BackwardMatchesNaiveFiniteDifferencesAndAccumulates) {
  const size_t n = 4000;
  const auto x = test::random_floats(n, 43, -5.0f, 5.0f), dout = test::random_floats(n, 44);
  const auto d0 = test::random_floats(n, 45);
  std::vector<float> dinp = d0;
  auto be = make_cpu_backend();
  be->gelu_backward(DType::f32, dinp.data(), x.data(), dout.data(), n);
  Vec ref(n), grad(n);
  for (size_t i = 0; i < n; ++i) ref[i] = d0[i] + test::gelu_grad_ref(x[i]) * dout[i];
  EXPECT_LT(test::rel_err(dinp, ref), kTolF32);

  // Elementwise: ∂L/∂x_i = gelu'(x_i)·R_i, differentiated numerically per element.
  std::vector<float> g(n, 0.0f);
  be->gelu_backward(DType::f32, g.data(), x.data(), dout.data(), n);
  const double h = 1e-5;
  for (size_t i = 0; i < n; ++i)
    grad[i] = (test::gelu_ref(x[i] + h) - test::gelu_ref(x[i] - h)) / (2 * h) * dout[i];
  const double efd = test::rel_err(g, grad);
  std::printf("gelu backward vs finite differences: %.2e\n", efd);
  EXPECT_LT(efd, kTolFd);

  be->gelu_backward(DType::f32, g.data(), x.data(), dout.data(), n);
  for (auto& v : grad) v *= 2;
  EXPECT_LT(test::rel_err(g, grad), kTolFd);
}

TEST(Gelu, LowPrecisionMatchesFp32) {
  auto be = make_cpu_backend();
  for (DType dt : {DType::bf16, DType::f16}) {
    const auto x = test::round_to(dt, test::random_floats(kN, 46, -4.0f, 4.0f));
    const auto dout = test::round_to(dt, test::random_floats(kN, 47));
    const double tol = dt == DType::bf16 ? 1e-2 : 2e-3;
    std::vector<float> out32(kN), d32(kN, 0.0f);
    be->gelu_forward(DType::f32, out32.data(), x.data(), kN);
    be->gelu_backward(DType::f32, d32.data(), x.data(), dout.data(), kN);
    Buf bx(dt, x), bd(dt, dout), out(dt, kN), din(dt, kN);
    be->gelu_forward(dt, out.data(), bx.data(), kN);
    be->gelu_backward(dt, din.data(), bx.data(), bd.data(), kN);
    EXPECT_LT(test::rel_err(out.get(), out32), tol) << dtype_name(dt);
    EXPECT_LT(test::rel_err(din.get(), d32), tol) << dtype_name(dt);
  }
}

}  // namespace
}  // namespace hybrid::kernels
