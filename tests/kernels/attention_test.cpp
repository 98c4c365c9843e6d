// Causal attention against the naive double reference (loops over b, h, t, j),
// finite differences of the double forward, fp16/bf16, the "+=" contract, the
// T×T kernel it replaced (kernels/cpu/attention_materialized.h), what it saves
// and concurrent calls.
// T = 70 crosses the kernel's 64-row query and key blocks (a full and a partial
// block); AnyLengthAndHeadSizeMatchNaive covers T = 1, 7, 65, 257 and odd heads.
#include <gtest/gtest.h>

#include <thread>

#include "kernels/cpu/attention_materialized.h"
#include "reference.h"

namespace hybrid::kernels {
namespace {

using test::Buf;
using test::Vec;

struct Shape {
  int B, T, C, NH;
  size_t qkv() const { return size_t(B) * T * 3 * C; }
  size_t out() const { return size_t(B) * T * C; }
};

struct Result {
  std::vector<float> out, saved, dqkv;
};

// Inputs of a forward and backward from seeds `seed`, +1 and +2: qkv in [-2, 2),
// the output's gradient, and the gradient the backward adds (+=) into.
struct Inputs {
  std::vector<float> qkv, dout, dqkv0;
};

Inputs random_inputs(const Shape& s, uint32_t seed) {
  return {test::random_floats(s.qkv(), seed, -2.0f, 2.0f), test::random_floats(s.out(), seed + 1),
          test::random_floats(s.qkv(), seed + 2)};
}

Result run(Backend& be, DType dt, const Shape& s, const std::vector<float>& qkv,
           const std::vector<float>& dout, const std::vector<float>& dqkv0,
           int backward_calls = 1) {
  Buf bqkv(dt, qkv), bout(dt, s.out()), bdout(dt, dout), bdqkv(dt, dqkv0);
  const size_t saved_bytes = be.attention_saved_bytes(dt, s.B, s.T, s.C, s.NH);
  std::vector<float> saved(saved_bytes / sizeof(float), -1.0f);
  be.attention_forward(dt, bout.data(), saved.data(), bqkv.data(), nullptr, s.B, s.T, s.C, s.NH,
                       s.NH);
  for (int i = 0; i < backward_calls; ++i)
    be.attention_backward(dt, bdqkv.data(), bdout.data(), bqkv.data(), bout.data(), saved.data(),
                          nullptr, s.B, s.T, s.C, s.NH, s.NH);
  return {bout.get(), saved, bdqkv.get()};
}

TEST(Attention, ForwardBackwardMatchNaive) {
  const Shape s{2, 70, 48, 4};
  const auto [qkv, dout, dqkv0] = random_inputs(s, 51);
  auto be = make_cpu_backend();
  const Result r = run(*be, DType::f32, s, qkv, dout, dqkv0);
  Vec lse;
  const Vec out = test::attention_fwd_ref(test::to_double(qkv), s.B, s.T, s.C, s.NH, nullptr, &lse);
  EXPECT_LT(test::rel_err(r.out, out), test::kTolF32);
  EXPECT_LT(test::rel_err(r.saved, lse), test::kTolF32) << "saved = logsumexp of each score row";
  Vec dqkv = test::to_double(dqkv0);
  test::attention_bwd_ref(dqkv, test::to_double(dout), test::to_double(qkv), s.B, s.T, s.C, s.NH);
  const double err = test::rel_err(r.dqkv, dqkv);
  std::printf("attention backward vs naive: %.2e\n", err);
  EXPECT_LT(err, test::kTolF32);
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
  EXPECT_LT(err, test::kTolFd);
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

// T = 1 (one key), 7 (one partial block), 65 (one key past a block), 257 (four
// full blocks and one row); head sizes 1, 3, 5, 9 and odd NH·hs.
TEST(Attention, AnyLengthAndHeadSizeMatchNaive) {
  const Shape shapes[] = {{2, 1, 6, 2},   {1, 7, 15, 3}, {2, 65, 21, 7},
                          {1, 257, 9, 1}, {1, 65, 5, 5}, {1, 130, 27, 3}};
  auto be = make_cpu_backend();
  uint32_t seed = 101;
  for (const Shape& s : shapes) {
    const auto [qkv, dout, dqkv0] = random_inputs(s, seed);
    seed += 3;
    const Result r = run(*be, DType::f32, s, qkv, dout, dqkv0);
    Vec lse;
    const Vec out =
        test::attention_fwd_ref(test::to_double(qkv), s.B, s.T, s.C, s.NH, nullptr, &lse);
    Vec dqkv = test::to_double(dqkv0);
    test::attention_bwd_ref(dqkv, test::to_double(dout), test::to_double(qkv), s.B, s.T, s.C, s.NH);
    const std::string at = "B " + std::to_string(s.B) + " T " + std::to_string(s.T) + " C " +
                           std::to_string(s.C) + " NH " + std::to_string(s.NH);
    EXPECT_LT(test::rel_err(r.out, out), test::kTolF32) << at;
    EXPECT_LT(test::rel_err(r.saved, lse), test::kTolF32) << at;
    EXPECT_LT(test::rel_err(r.dqkv, dqkv), test::kTolF32) << at;
  }
}

// Scores of standard deviation ≈ 12 (bound ±100): rows whose max grows across key blocks, so
// the online softmax rescales often, and probabilities that underflow.
TEST(Attention, LargeScoresMatchNaive) {
  const Shape s{1, 200, 16, 2};
  const auto qkv = test::random_floats(s.qkv(), 64, -6.0f, 6.0f);
  const auto dout = test::random_floats(s.out(), 65);
  auto be = make_cpu_backend();
  const Result r = run(*be, DType::f32, s, qkv, dout, std::vector<float>(s.qkv(), 0.0f));
  Vec lse;
  const Vec out = test::attention_fwd_ref(test::to_double(qkv), s.B, s.T, s.C, s.NH, nullptr, &lse);
  Vec dqkv(s.qkv(), 0.0);
  test::attention_bwd_ref(dqkv, test::to_double(dout), test::to_double(qkv), s.B, s.T, s.C, s.NH);
  const double e_out = test::rel_err(r.out, out), e_lse = test::rel_err(r.saved, lse);
  const double e_d = test::rel_err(r.dqkv, dqkv);
  std::printf("large scores vs naive: out %.2e, lse %.2e, dqkv %.2e\n", e_out, e_lse, e_d);
  EXPECT_LT(e_out, test::kTolF32);
  EXPECT_LT(e_lse, test::kTolF32);
  EXPECT_LT(e_d, test::kTolF32);
}

// The flash kernel against the T×T kernel it replaced, GPT-2's head size (64),
// T = 300 (4 full blocks and a partial one): both are fp32 with different
// summation orders, so they agree to fp32 rounding, not bit for bit. Tolerance
// 2e-6 (max error over max magnitude; measured 3.3e-7 on out, 5.6e-7 on dqkv).
TEST(Attention, MatchesMaterializedKernel) {
  const Shape s{2, 300, 128, 2};
  const auto [qkv, dout, dqkv0] = random_inputs(s, 60);
  auto be = make_cpu_backend();
  const Result r = run(*be, DType::f32, s, qkv, dout, dqkv0);
  Buf out(DType::f32, s.out()), bqkv(DType::f32, qkv), bdout(DType::f32, dout);
  Buf dqkv(DType::f32, dqkv0);
  std::vector<float> P(cpu::attention_materialized_saved_bytes(s.B, s.T, s.NH) / sizeof(float));
  cpu::attention_materialized_forward(DType::f32, out.data(), P.data(), bqkv.data(), s.B, s.T, s.C,
                                      s.NH);
  cpu::attention_materialized_backward(DType::f32, dqkv.data(), bdout.data(), bqkv.data(), P.data(),
                                       s.B, s.T, s.C, s.NH);
  const double err_out = test::rel_err(r.out, test::to_double(out.get()));
  const double err_d = test::rel_err(r.dqkv, test::to_double(dqkv.get()));
  std::printf("flash vs materialized attention: out %.2e, dqkv %.2e\n", err_out, err_d);
  EXPECT_LT(err_out, 2e-6);
  EXPECT_LT(err_d, 2e-6);
}

// The memory claim: forward keeps one fp32 per (batch, head, row), whatever the
// dtype, and writes nothing past it; at T = 1024 that is 1/1024 of the T×T kernel's.
TEST(Attention, SavesOneFloatPerRow) {
  auto be = make_cpu_backend();
  for (DType dt : {DType::f32, DType::bf16, DType::f16})
    EXPECT_EQ(be->attention_saved_bytes(dt, 3, 1024, 768, 12), size_t(3) * 12 * 1024 * 4);
  EXPECT_LE(8 * be->attention_saved_bytes(DType::f32, 4, 1024, 768, 12),
            cpu::attention_materialized_saved_bytes(4, 1024, 12));
  const Shape s{2, 70, 48, 4};
  const size_t n = be->attention_saved_bytes(DType::f32, s.B, s.T, s.C, s.NH) / sizeof(float);
  std::vector<float> saved(n + 64, -7.0f);
  Buf out(DType::f32, s.out()), qkv(DType::f32, test::random_floats(s.qkv(), 63));
  be->attention_forward(DType::f32, out.data(), saved.data(), qkv.data(), nullptr, s.B, s.T, s.C,
                        s.NH, s.NH);
  for (size_t i = n; i < saved.size(); ++i) ASSERT_EQ(saved[i], -7.0f) << "written past the end";
}

// Thread safety: two shapes (different per-thread scratch sizes) at once from two
// threads give the bits of one after the other.
TEST(Attention, ConcurrentCallsGiveTheSerialBits) {
  const Shape shapes[2] = {{2, 130, 48, 4}, {3, 67, 30, 2}};
  std::vector<float> qkv[2], dout[2];
  Result serial[2], parallel[2];
  auto be = make_cpu_backend();
  for (int i = 0; i < 2; ++i) {
    qkv[i] = test::random_floats(shapes[i].qkv(), 70 + i);
    dout[i] = test::random_floats(shapes[i].out(), 72 + i);
    serial[i] = run(*be, DType::f32, shapes[i], qkv[i], dout[i], qkv[i]);
  }
  std::thread other(
      [&] { parallel[1] = run(*be, DType::f32, shapes[1], qkv[1], dout[1], qkv[1]); });
  parallel[0] = run(*be, DType::f32, shapes[0], qkv[0], dout[0], qkv[0]);
  other.join();
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(parallel[i].out, serial[i].out) << "shape " << i;
    EXPECT_EQ(parallel[i].saved, serial[i].saved) << "shape " << i;
    EXPECT_EQ(parallel[i].dqkv, serial[i].dqkv) << "shape " << i;
  }
}

TEST(Attention, RejectsHeadsNotDividingChannels) {
  auto be = make_cpu_backend();
  std::vector<float> buf(1024);
  EXPECT_THROW(be->attention_forward(DType::f32, buf.data(), buf.data(), buf.data(), nullptr, 1, 4,
                                     10, 3, 3),
               std::invalid_argument);
}

}  // namespace
}  // namespace hybrid::kernels
