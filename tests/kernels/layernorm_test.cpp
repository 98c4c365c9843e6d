// layernorm_forward/backward against the naive double reference, finite
// differences of the double forward, fp16/bf16 storage and the "+=" contract.
#include <gtest/gtest.h>

#include "reference.h"

namespace hybrid::kernels {
namespace {

using test::Buf;
using test::Vec;

constexpr int N = 12, C = 72;
constexpr double kTolF32 = 1e-5;  // fp32 statistics over C = 72 channels
constexpr double kTolFd = 1e-4;   // vs central differences (h = 1e-5) of the double forward

struct Data {
  // A row offset of 3 makes the mean non-trivial (tests the centred variance).
  std::vector<float> x = test::random_floats(size_t(N) * C, 31, 2.0f, 4.0f);
  std::vector<float> w = test::random_floats(C, 32, 0.5f, 1.5f);
  std::vector<float> b = test::random_floats(C, 33);
  std::vector<float> dout = test::random_floats(size_t(N) * C, 34);
};

TEST(LayerNorm, ForwardMatchesNaive) {
  Data d;
  std::vector<float> out(size_t(N) * C), mean(N), rstd(N);
  make_cpu_backend()->layernorm_forward(DType::f32, out.data(), mean.data(), rstd.data(),
                                        d.x.data(), d.w.data(), d.b.data(), N, C);
  Vec rmean(N), rrstd(N);
  const Vec ref = test::layernorm_fwd_ref(test::to_double(d.x), test::to_double(d.w),
                                          test::to_double(d.b), N, C, &rmean, &rrstd);
  EXPECT_LT(test::rel_err(out, ref), kTolF32);
  EXPECT_LT(test::rel_err(mean, rmean), kTolF32);
  EXPECT_LT(test::rel_err(rstd, rrstd), kTolF32);
}

TEST(LayerNorm, BackwardMatchesNaiveAndFiniteDifferences) {
  Data d;
  auto be = make_cpu_backend();
  std::vector<float> out(size_t(N) * C), mean(N), rstd(N);
  be->layernorm_forward(DType::f32, out.data(), mean.data(), rstd.data(), d.x.data(), d.w.data(),
                        d.b.data(), N, C);
  std::vector<float> dx(size_t(N) * C, 0.0f), dw(C, 0.0f), db(C, 0.0f);
  be->layernorm_backward(DType::f32, dx.data(), dw.data(), db.data(), d.dout.data(), d.x.data(),
                         d.w.data(), mean.data(), rstd.data(), N, C);
  Vec rdx(size_t(N) * C, 0.0), rdw(C, 0.0), rdb(C, 0.0);
  test::layernorm_bwd_ref(rdx, rdw, rdb, test::to_double(d.dout), test::to_double(d.x),
                          test::to_double(d.w), N, C);
  EXPECT_LT(test::rel_err(dx, rdx), kTolF32);
  EXPECT_LT(test::rel_err(dw, rdw), kTolF32);
  EXPECT_LT(test::rel_err(db, rdb), kTolF32);

  Vec x = test::to_double(d.x), w = test::to_double(d.w), b = test::to_double(d.b);
  const Vec R = test::to_double(d.dout);
  auto loss = [&] { return test::dot(test::layernorm_fwd_ref(x, w, b, N, C), R); };
  const double ex = test::rel_err(dx, test::finite_diff(x, loss));
  const double ew = test::rel_err(dw, test::finite_diff(w, loss));
  const double eb = test::rel_err(db, test::finite_diff(b, loss));
  std::printf("layernorm backward vs finite differences: dinp %.2e dweight %.2e dbias %.2e\n", ex,
              ew, eb);
  EXPECT_LT(ex, kTolFd);
  EXPECT_LT(ew, kTolFd);
  EXPECT_LT(eb, kTolFd);

  // "+=": a second call doubles every gradient.
  be->layernorm_backward(DType::f32, dx.data(), dw.data(), db.data(), d.dout.data(), d.x.data(),
                         d.w.data(), mean.data(), rstd.data(), N, C);
  for (auto& v : rdx) v *= 2;
  for (auto& v : rdw) v *= 2;
  for (auto& v : rdb) v *= 2;
  EXPECT_LT(test::rel_err(dx, rdx), kTolF32);
  EXPECT_LT(test::rel_err(dw, rdw), kTolF32);
  EXPECT_LT(test::rel_err(db, rdb), kTolF32);
}

// Many rows (the multi-threaded path with per-thread dweight partials).
TEST(LayerNorm, ManyRowsParallelReduction) {
  const int n = 700, c = 96;
  const auto x = test::random_floats(size_t(n) * c, 35), w = test::random_floats(c, 36),
             b = test::random_floats(c, 37), dout = test::random_floats(size_t(n) * c, 38);
  auto be = make_cpu_backend();
  std::vector<float> out(x.size()), mean(n), rstd(n), dx(x.size(), 0.0f), dw(c, 0.0f), db(c, 0.0f);
  be->layernorm_forward(DType::f32, out.data(), mean.data(), rstd.data(), x.data(), w.data(),
                        b.data(), n, c);
  be->layernorm_backward(DType::f32, dx.data(), dw.data(), db.data(), dout.data(), x.data(),
                         w.data(), mean.data(), rstd.data(), n, c);
  Vec rdx(x.size(), 0.0), rdw(c, 0.0), rdb(c, 0.0);
  test::layernorm_bwd_ref(rdx, rdw, rdb, test::to_double(dout), test::to_double(x),
                          test::to_double(w), n, c);
  EXPECT_LT(test::rel_err(dx, rdx), kTolF32);
  EXPECT_LT(test::rel_err(dw, rdw), kTolF32);
  EXPECT_LT(test::rel_err(db, rdb), kTolF32);
}

TEST(LayerNorm, LowPrecisionMatchesFp32) {
  auto be = make_cpu_backend();
  for (DType dt : {DType::bf16, DType::f16}) {
    Data d;
    d.x = test::round_to(dt, d.x);
    d.w = test::round_to(dt, d.w);
    d.b = test::round_to(dt, d.b);
    d.dout = test::round_to(dt, d.dout);
    const double tol = dt == DType::bf16 ? 1e-2 : 2e-3;
    std::vector<float> out32(size_t(N) * C), mean(N), rstd(N), dx32(out32.size(), 0.0f),
        dw32(C, 0.0f), db32(C, 0.0f);
    be->layernorm_forward(DType::f32, out32.data(), mean.data(), rstd.data(), d.x.data(),
                          d.w.data(), d.b.data(), N, C);
    be->layernorm_backward(DType::f32, dx32.data(), dw32.data(), db32.data(), d.dout.data(),
                           d.x.data(), d.w.data(), mean.data(), rstd.data(), N, C);
    Buf x(dt, d.x), w(dt, d.w), b(dt, d.b), dout(dt, d.dout), out(dt, out32.size());
    Buf dx(dt, out32.size()), dw(dt, C), db(dt, C);
    std::vector<float> mean_lp(N), rstd_lp(N);
    be->layernorm_forward(dt, out.data(), mean_lp.data(), rstd_lp.data(), x.data(), w.data(),
                          b.data(), N, C);
    be->layernorm_backward(dt, dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(),
                           mean_lp.data(), rstd_lp.data(), N, C);
    EXPECT_LT(test::rel_err(mean_lp, mean), 1e-6) << "statistics are fp32 whatever dt is";
    EXPECT_LT(test::rel_err(out.get(), out32), tol) << dtype_name(dt);
    EXPECT_LT(test::rel_err(dx.get(), dx32), tol) << dtype_name(dt);
    EXPECT_LT(test::rel_err(dw.get(), dw32), tol) << dtype_name(dt);
    EXPECT_LT(test::rel_err(db.get(), db32), tol) << dtype_name(dt);
  }
}

}  // namespace
}  // namespace hybrid::kernels
