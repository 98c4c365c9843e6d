// rmsnorm_forward/backward (the Llama family) against a naive double reference
// (HF's LlamaRMSNorm: x·rsqrt(mean(x²) + eps)·weight), finite differences of
// that reference, many rows (per-thread weight-gradient partials), fp16/bf16
// storage and the "+=" contract.
#include <gtest/gtest.h>

#include "reference.h"

namespace hybrid::kernels {
namespace {

using test::Buf;
using test::Vec;

constexpr float kEps = 1e-6f;     // Llama's rms_norm_eps
constexpr double kTolF32 = 1e-5;  // fp32 statistics over C = 72 channels
constexpr double kTolFd = 1e-4;   // vs central differences (h = 1e-5) of the double forward

Vec rmsnorm_ref(const Vec& x, const Vec& w, int N, int C, Vec* rstd = nullptr) {
  Vec out(x.size());
  for (int i = 0; i < N; ++i) {
    double ss = 0;
    for (int c = 0; c < C; ++c) ss += x[size_t(i * C + c)] * x[size_t(i * C + c)];
    const double r = 1.0 / std::sqrt(ss / C + double(kEps));
    if (rstd) (*rstd)[size_t(i)] = r;
    for (int c = 0; c < C; ++c) out[size_t(i * C + c)] = x[size_t(i * C + c)] * r * w[size_t(c)];
  }
  return out;
}

struct Data {
  int N, C;
  std::vector<float> x, w, dout;
  Data(int n, int c, uint32_t seed)
      : N(n),
        C(c),
        x(test::random_floats(size_t(n) * c, seed, -2.0f, 3.0f)),
        w(test::random_floats(size_t(c), seed + 1, 0.5f, 1.5f)),
        dout(test::random_floats(size_t(n) * c, seed + 2)) {}
};

TEST(RmsNorm, ForwardMatchesNaive) {
  const Data d(12, 72, 51);
  std::vector<float> out(d.x.size()), rstd(size_t(d.N));
  make_cpu_backend()->rmsnorm_forward(DType::f32, out.data(), rstd.data(), d.x.data(), d.w.data(),
                                      d.N, d.C, kEps);
  Vec rrstd(size_t(d.N));
  const Vec ref = rmsnorm_ref(test::to_double(d.x), test::to_double(d.w), d.N, d.C, &rrstd);
  EXPECT_LT(test::rel_err(out, ref), kTolF32);
  EXPECT_LT(test::rel_err(rstd, rrstd), kTolF32);
}

void check_backward(const Data& d) {
  auto be = make_cpu_backend();
  std::vector<float> out(d.x.size()), rstd(size_t(d.N));
  be->rmsnorm_forward(DType::f32, out.data(), rstd.data(), d.x.data(), d.w.data(), d.N, d.C, kEps);
  std::vector<float> dx(d.x.size(), 0.0f), dw(size_t(d.C), 0.0f);
  be->rmsnorm_backward(DType::f32, dx.data(), dw.data(), d.dout.data(), d.x.data(), d.w.data(),
                       rstd.data(), d.N, d.C);
  Vec x = test::to_double(d.x), w = test::to_double(d.w);
  const Vec R = test::to_double(d.dout);
  auto loss = [&] { return test::dot(rmsnorm_ref(x, w, d.N, d.C), R); };
  std::vector<size_t> some;  // about 150 inputs: finite differences cost 2 forwards each
  for (size_t i = 0; i < x.size(); i += std::max<size_t>(7, x.size() / 150)) some.push_back(i);
  const Vec fdx = test::finite_diff(x, loss, 1e-5, some), fdw = test::finite_diff(w, loss);
  std::vector<float> dx_some;
  for (size_t i : some) dx_some.push_back(dx[i]);
  const double ex = test::rel_err(dx_some, fdx), ew = test::rel_err(dw, fdw);
  std::printf("rmsnorm backward (N %d, C %d) vs finite differences: dinp %.2e dweight %.2e\n", d.N,
              d.C, ex, ew);
  EXPECT_LT(ex, kTolFd);
  EXPECT_LT(ew, kTolFd);
  // "+=": a second call doubles both gradients.
  const auto dx1 = dx, dw1 = dw;
  be->rmsnorm_backward(DType::f32, dx.data(), dw.data(), d.dout.data(), d.x.data(), d.w.data(),
                       rstd.data(), d.N, d.C);
  for (size_t i = 0; i < dx.size(); ++i) EXPECT_FLOAT_EQ(dx[i], 2 * dx1[i]);
  for (size_t i = 0; i < dw.size(); ++i) EXPECT_NEAR(dw[i], 2 * dw1[i], 1e-5 * std::abs(dw1[i]));
}

TEST(RmsNorm, BackwardMatchesFiniteDifferences) { check_backward(Data(12, 72, 52)); }

// Enough rows for the multi-threaded path and its per-thread partials.
TEST(RmsNorm, ManyRowsParallelReduction) { check_backward(Data(700, 96, 53)); }

TEST(RmsNorm, LowPrecisionMatchesFp32) {
  auto be = make_cpu_backend();
  const Data d(16, 64, 54);
  for (DType dt : {DType::bf16, DType::f16}) {
    const auto x = test::round_to(dt, d.x), w = test::round_to(dt, d.w),
               g = test::round_to(dt, d.dout);
    const double tol = dt == DType::bf16 ? 1e-2 : 2e-3;
    std::vector<float> out32(x.size()), rstd(size_t(d.N)), dx32(x.size(), 0.0f),
        dw32(w.size(), 0.0f);
    be->rmsnorm_forward(DType::f32, out32.data(), rstd.data(), x.data(), w.data(), d.N, d.C, kEps);
    be->rmsnorm_backward(DType::f32, dx32.data(), dw32.data(), g.data(), x.data(), w.data(),
                         rstd.data(), d.N, d.C);
    Buf bx(dt, x), bw(dt, w), bg(dt, g), out(dt, x.size()), dx(dt, x.size()), dw(dt, w.size());
    std::vector<float> rstd_lp(size_t(d.N));
    be->rmsnorm_forward(dt, out.data(), rstd_lp.data(), bx.data(), bw.data(), d.N, d.C, kEps);
    be->rmsnorm_backward(dt, dx.data(), dw.data(), bg.data(), bx.data(), bw.data(), rstd_lp.data(),
                         d.N, d.C);
    EXPECT_EQ(rstd_lp, rstd) << "statistics in fp32 from the same stored values";
    EXPECT_LT(test::rel_err(out.get(), out32), tol) << dtype_name(dt);
    EXPECT_LT(test::rel_err(dx.get(), dx32), tol) << dtype_name(dt);
    EXPECT_LT(test::rel_err(dw.get(), dw32), tol) << dtype_name(dt);
  }
}

}  // namespace
}  // namespace hybrid::kernels
