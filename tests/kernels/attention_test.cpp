// Causal attention against the naive double reference (loops over b, h, t, j),
// finite differences of the double forward, fp16/bf16 and the "+=" contract.
// T = 70 crosses the kernel's 64-row causal blocks (a full and a partial block).
#include <gtest/gtest.h>

#include "reference.h"

namespace hybrid::kernels {
namespace {

using test::Buf;
using test::Vec;

constexpr double kTolF32 = 1e-5;
constexpr double kTolFd = 1e-4;

struct Shape {
  int B, T, C, NH;
  size_t qkv() const { return size_t(B) * T * 3 * C; }
  size_t out() const { return size_t(B) * T * C; }
};

struct Result {
  std::vector<float> out, saved, dqkv;
};

Result run(Backend& be, DType dt, const Shape& s, const std::vector<float>& qkv,
           const std::vector<float>& dout, const std::vector<float>& dqkv0,
           int backward_calls = 1) {
  Buf bqkv(dt, qkv), bout(dt, s.out()), bdout(dt, dout), bdqkv(dt, dqkv0);
  const size_t saved_bytes = be.attention_saved_bytes(dt, s.B, s.T, s.C, s.NH);
  EXPECT_EQ(saved_bytes, size_t(s.B) * s.NH * s.T * s.T * sizeof(float));
  std::vector<float> saved(saved_bytes / sizeof(float), -1.0f);
  be.attention_forward(dt, bout.data(), saved.data(), bqkv.data(), s.B, s.T, s.C, s.NH);
  for (int i = 0; i < backward_calls; ++i)
    be.attention_backward(dt, bdqkv.data(), bdout.data(), bqkv.data(), bout.data(), saved.data(),
                          s.B, s.T, s.C, s.NH);
  return {bout.get(), saved, bdqkv.get()};
}

TEST(Attention, ForwardBackwardMatchNaive) {
  const Shape s{2, 70, 48, 4};
  const auto qkv = test::random_floats(s.qkv(), 51, -2.0f, 2.0f);
  const auto dout = test::random_floats(s.out(), 52);
  const auto dqkv0 = test::random_floats(s.qkv(), 53);
  auto be = make_cpu_backend();
  const Result r = run(*be, DType::f32, s, qkv, dout, dqkv0);
  Vec P;
  const Vec out = test::attention_fwd_ref(test::to_double(qkv), s.B, s.T, s.C, s.NH, &P);
  EXPECT_LT(test::rel_err(r.out, out), kTolF32);
  EXPECT_LT(test::rel_err(r.saved, P), kTolF32) << "saved = probabilities, 0 above the diagonal";
  Vec dqkv = test::to_double(dqkv0);
  test::attention_bwd_ref(dqkv, test::to_double(dout), test::to_double(qkv), s.B, s.T, s.C, s.NH);
  const double err = test::rel_err(r.dqkv, dqkv);
  std::printf("attention backward vs naive: %.2e\n", err);
  EXPECT_LT(err, kTolF32);
}

TEST(Attention, BackwardMatchesFiniteDifferences) {
  const Shape s{2, 9, 12, 3};
  const auto qkv = test::random_floats(s.qkv(), 54, -2.0f, 2.0f);
  const auto dout = test::random_floats(s.out(), 55);
  auto be = make_cpu_backend();
  const Result r = run(*be, DType::f32, s, qkv, dout, std::vector<float>(s.qkv(), 0.0f));
  Vec x = test::to_double(qkv);
  const Vec R = test::to_double(dout);
  auto loss = [&] { return test::dot(test::attention_fwd_ref(x, s.B, s.T, s.C, s.NH), R); };
  const double err = test::rel_err(r.dqkv, test::finite_diff(x, loss));
  std::printf("attention backward vs finite differences: %.2e\n", err);
  EXPECT_LT(err, kTolFd);
}

TEST(Attention, BackwardAccumulates) {
  const Shape s{1, 33, 16, 2};
  const auto qkv = test::random_floats(s.qkv(), 56), dout = test::random_floats(s.out(), 57);
  auto be = make_cpu_backend();
  const std::vector<float> zeros(s.qkv(), 0.0f);
  const Result once = run(*be, DType::f32, s, qkv, dout, zeros, 1);
  const Result twice = run(*be, DType::f32, s, qkv, dout, zeros, 2);
  std::vector<float> doubled(once.dqkv);
  for (auto& v : doubled) v *= 2;
  EXPECT_LT(test::rel_err(twice.dqkv, doubled), 1e-6);
}

TEST(Attention, LowPrecisionMatchesFp32) {
  const Shape s{2, 40, 32, 2};
  auto be = make_cpu_backend();
  for (DType dt : {DType::bf16, DType::f16}) {
    const auto qkv = test::round_to(dt, test::random_floats(s.qkv(), 58));
    const auto dout = test::round_to(dt, test::random_floats(s.out(), 59));
    const std::vector<float> zeros(s.qkv(), 0.0f);
    const double tol = dt == DType::bf16 ? 1e-2 : 2e-3;
    const Result r32 = run(*be, DType::f32, s, qkv, dout, zeros);
    const Result r = run(*be, dt, s, qkv, dout, zeros);
    EXPECT_LT(test::rel_err(r.out, r32.out), tol) << dtype_name(dt);
    EXPECT_LT(test::rel_err(r.dqkv, r32.dqkv), tol) << dtype_name(dt);
  }
}

TEST(Attention, RejectsHeadsNotDividingChannels) {
  auto be = make_cpu_backend();
  std::vector<float> buf(1024);
  EXPECT_THROW(be->attention_forward(DType::f32, buf.data(), buf.data(), buf.data(), 1, 4, 10, 3),
               std::invalid_argument);
}

}  // namespace
}  // namespace hybrid::kernels
