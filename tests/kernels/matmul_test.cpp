// matmul_forward/backward (linear layer, weight [N, K]) against the naive double
// reference, central finite differences, fp16/bf16 storage and the "+=" contract.
#include <gtest/gtest.h>

#include "reference.h"

namespace hybrid::kernels {
namespace {

using test::Buf;
using test::Vec;

constexpr int M = 24, K = 20, N = 28;
constexpr double kTolF32 = 1e-5;  // kernel (fp32) vs naive double, relative to max |ref|
constexpr double kTolFd = 1e-4;   // kernel gradient vs central differences (h = 1e-5)

struct Data {
  std::vector<float> inp = test::random_floats(size_t(M) * K, 11);
  std::vector<float> w = test::random_floats(size_t(N) * K, 12);
  std::vector<float> bias = test::random_floats(N, 13);
  std::vector<float> dout = test::random_floats(size_t(M) * N, 14);
};

struct Grads {
  std::vector<float> dinp, dw, db;
};

Grads run_backward(Backend& be, DType dt, const Data& d, int times = 1) {
  Buf dinp(dt, size_t(M) * K), dw(dt, size_t(N) * K), db(dt, N);
  Buf dout(dt, d.dout), inp(dt, d.inp), w(dt, d.w);
  for (int i = 0; i < times; ++i)
    be.matmul_backward(dt, dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), M,
                       K, N);
  return {dinp.get(), dw.get(), db.get()};
}

TEST(Matmul, ForwardMatchesNaive) {
  Data d;
  auto be = make_cpu_backend();
  std::vector<float> out(size_t(M) * N);
  be->matmul_forward(DType::f32, out.data(), d.inp.data(), d.w.data(), d.bias.data(), M, K, N);
  const Vec bias = test::to_double(d.bias);
  const Vec ref =
      test::matmul_fwd_ref(test::to_double(d.inp), test::to_double(d.w), &bias, M, K, N);
  EXPECT_LT(test::rel_err(out, ref), kTolF32);
  // Without bias.
  be->matmul_forward(DType::f32, out.data(), d.inp.data(), d.w.data(), nullptr, M, K, N);
  EXPECT_LT(test::rel_err(out, test::matmul_fwd_ref(test::to_double(d.inp), test::to_double(d.w),
                                                    nullptr, M, K, N)),
            kTolF32);
}

TEST(Matmul, BackwardMatchesNaiveAndFiniteDifferences) {
  Data d;
  auto be = make_cpu_backend();
  const Grads g = run_backward(*be, DType::f32, d);
  Vec dinp(size_t(M) * K, 0.0), dw(size_t(N) * K, 0.0), db(N, 0.0);
  test::matmul_bwd_ref(dinp, dw, db, test::to_double(d.dout), test::to_double(d.inp),
                       test::to_double(d.w), M, K, N);
  EXPECT_LT(test::rel_err(g.dinp, dinp), kTolF32);
  EXPECT_LT(test::rel_err(g.dw, dw), kTolF32);
  EXPECT_LT(test::rel_err(g.db, db), kTolF32);

  Vec inp = test::to_double(d.inp), w = test::to_double(d.w), bias = test::to_double(d.bias);
  const Vec R = test::to_double(d.dout);
  auto loss = [&] { return test::dot(test::matmul_fwd_ref(inp, w, &bias, M, K, N), R); };
  const double e_inp = test::rel_err(g.dinp, test::finite_diff(inp, loss));
  const double e_w = test::rel_err(g.dw, test::finite_diff(w, loss));
  const double e_b = test::rel_err(g.db, test::finite_diff(bias, loss));
  std::printf("matmul backward vs finite differences: dinp %.2e dweight %.2e dbias %.2e\n", e_inp,
              e_w, e_b);
  EXPECT_LT(e_inp, kTolFd);
  EXPECT_LT(e_w, kTolFd);
  EXPECT_LT(e_b, kTolFd);
}

TEST(Matmul, BackwardAccumulates) {
  Data d;
  auto be = make_cpu_backend();
  const Grads once = run_backward(*be, DType::f32, d, 1);
  const Grads twice = run_backward(*be, DType::f32, d, 2);
  for (auto [a, b] : {std::pair{&once.dinp, &twice.dinp}, std::pair{&once.dw, &twice.dw},
                      std::pair{&once.db, &twice.db}}) {
    std::vector<float> doubled(a->size());
    for (size_t i = 0; i < a->size(); ++i) doubled[i] = 2.0f * (*a)[i];
    EXPECT_LT(test::rel_err(*b, doubled), 1e-6);
  }
}

// Null gradient pointers are skipped.
TEST(Matmul, NullGradientsAreSkipped) {
  Data d;
  auto be = make_cpu_backend();
  std::vector<float> dw(size_t(N) * K, 0.0f);
  be->matmul_backward(DType::f32, nullptr, dw.data(), nullptr, d.dout.data(), d.inp.data(),
                      d.w.data(), M, K, N);
  Vec rdinp(size_t(M) * K, 0.0), rdw(size_t(N) * K, 0.0), rdb(N, 0.0);
  test::matmul_bwd_ref(rdinp, rdw, rdb, test::to_double(d.dout), test::to_double(d.inp),
                       test::to_double(d.w), M, K, N);
  EXPECT_LT(test::rel_err(dw, rdw), kTolF32);
}

// Same rounded inputs through fp16/bf16 storage vs fp32: bf16 1e-2, fp16 2e-3.
TEST(Matmul, LowPrecisionMatchesFp32) {
  auto be = make_cpu_backend();
  for (DType dt : {DType::bf16, DType::f16}) {
    Data d;
    d.inp = test::round_to(dt, d.inp);
    d.w = test::round_to(dt, d.w);
    d.bias = test::round_to(dt, d.bias);
    d.dout = test::round_to(dt, d.dout);
    const double tol = dt == DType::bf16 ? 1e-2 : 2e-3;
    std::vector<float> out32(size_t(M) * N);
    be->matmul_forward(DType::f32, out32.data(), d.inp.data(), d.w.data(), d.bias.data(), M, K, N);
    Buf out(dt, size_t(M) * N), inp(dt, d.inp), w(dt, d.w), bias(dt, d.bias);
    be->matmul_forward(dt, out.data(), inp.data(), w.data(), bias.data(), M, K, N);
    EXPECT_LT(test::rel_err(out.get(), out32), tol) << dtype_name(dt);
    const Grads g32 = run_backward(*be, DType::f32, d), g = run_backward(*be, dt, d);
    EXPECT_LT(test::rel_err(g.dinp, g32.dinp), tol) << dtype_name(dt);
    EXPECT_LT(test::rel_err(g.dw, g32.dw), tol) << dtype_name(dt);
    EXPECT_LT(test::rel_err(g.db, g32.db), tol) << dtype_name(dt);
  }
}

}  // namespace
}  // namespace hybrid::kernels
