// Fused softmax + cross-entropy against the naive double reference, finite
// differences, padded vocabulary columns, in-place (aliased) backward, fp16/bf16.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "reference.h"

namespace hybrid::kernels {
namespace {

using test::Buf;
using test::Vec;

struct Data {
  int N, V, Vp;
  std::vector<float> logits;
  std::vector<int32_t> targets;
  Data(int n, int v, int vp, uint32_t seed, float scale = 4.0f)
      : N(n),
        V(v),
        Vp(vp),
        logits(test::random_floats(size_t(n) * vp, seed, -scale, scale)),
        targets(test::random_ints(size_t(n), v, seed + 1)) {
    // Garbage in the padding: it must not reach the loss.
    for (int i = 0; i < N; ++i)
      for (int j = V; j < Vp; ++j) logits[size_t(i) * Vp + j] = 1e30f;
  }
};

TEST(CrossEntropy, ForwardMatchesNaiveAcrossChunks) {
  for (const Data& d : {Data(5, 1000, 1024, 61), Data(3, 5003, 5056, 62, 30.0f)}) {
    std::vector<float> losses(d.N), lse(d.N);
    make_cpu_backend()->cross_entropy_forward(DType::f32, losses.data(), lse.data(),
                                              d.logits.data(), d.targets.data(), d.N, d.V, d.Vp);
    Vec rl, rlse;
    test::cross_entropy_ref(test::to_double(d.logits), d.targets, d.N, d.V, d.Vp, rl, rlse);
    EXPECT_LT(test::rel_err(losses, rl), test::kTolF32) << "V = " << d.V;
    EXPECT_LT(test::rel_err(lse, rlse), test::kTolF32) << "V = " << d.V;
  }
}

TEST(CrossEntropy, BackwardMatchesNaiveAndZeroesPadding) {
  const Data d(4, 3000, 3072, 63);
  const float dloss = 0.25f;
  auto be = make_cpu_backend();
  std::vector<float> losses(d.N), lse(d.N);
  be->cross_entropy_forward(DType::f32, losses.data(), lse.data(), d.logits.data(),
                            d.targets.data(), d.N, d.V, d.Vp);
  std::vector<float> dlogits(d.logits.size(), std::numeric_limits<float>::quiet_NaN());
  be->cross_entropy_backward(DType::f32, dlogits.data(), d.logits.data(), lse.data(),
                             d.targets.data(), dloss, d.N, d.V, d.Vp);
  Vec ref(d.logits.size(), 0.0), rl, rlse;
  test::cross_entropy_ref(test::to_double(d.logits), d.targets, d.N, d.V, d.Vp, rl, rlse);
  for (int i = 0; i < d.N; ++i)
    for (int j = 0; j < d.V; ++j)
      ref[size_t(i) * d.Vp + j] =
          dloss * (std::exp(double(d.logits[size_t(i) * d.Vp + j]) - rlse[i]) -
                   (j == d.targets[i] ? 1.0 : 0.0));
  EXPECT_LT(test::rel_err(dlogits, ref), test::kTolF32);
  for (int i = 0; i < d.N; ++i)
    for (int j = d.V; j < d.Vp; ++j) ASSERT_EQ(dlogits[size_t(i) * d.Vp + j], 0.0f);

  // In place: dlogits aliasing logits gives the same bits.
  std::vector<float> inplace = d.logits;
  be->cross_entropy_backward(DType::f32, inplace.data(), inplace.data(), lse.data(),
                             d.targets.data(), dloss, d.N, d.V, d.Vp);
  EXPECT_EQ(inplace, dlogits);
}

TEST(CrossEntropy, BackwardMatchesFiniteDifferences) {
  const Data d(4, 50, 64, 64);
  const float dloss = 0.5f;
  auto be = make_cpu_backend();
  std::vector<float> losses(d.N), lse(d.N), dlogits(d.logits.size());
  be->cross_entropy_forward(DType::f32, losses.data(), lse.data(), d.logits.data(),
                            d.targets.data(), d.N, d.V, d.Vp);
  be->cross_entropy_backward(DType::f32, dlogits.data(), d.logits.data(), lse.data(),
                             d.targets.data(), dloss, d.N, d.V, d.Vp);
  Vec x = test::to_double(d.logits);
  auto loss = [&] {
    Vec l, s;
    test::cross_entropy_ref(x, d.targets, d.N, d.V, d.Vp, l, s);
    double total = 0.0;
    for (double v : l) total += dloss * v;
    return total;
  };
  std::vector<size_t> idx;  // the real columns (padding has no gradient)
  std::vector<float> got;
  for (int i = 0; i < d.N; ++i)
    for (int j = 0; j < d.V; ++j) {
      idx.push_back(size_t(i) * d.Vp + j);
      got.push_back(dlogits[size_t(i) * d.Vp + j]);
    }
  const double err = test::rel_err(got, test::finite_diff(x, loss, 1e-5, idx));
  std::printf("cross-entropy backward vs finite differences: %.2e\n", err);
  EXPECT_LT(err, test::kTolFd);
}

TEST(CrossEntropy, LowPrecisionMatchesFp32) {
  auto be = make_cpu_backend();
  for (DType dt : {DType::bf16, DType::f16}) {
    Data d(4, 2000, 2048, 65);
    d.logits = test::round_to(dt, d.logits);
    const double tol = dt == DType::bf16 ? 1e-2 : 2e-3;
    std::vector<float> l32(d.N), s32(d.N), g32(d.logits.size()), l(d.N), s(d.N);
    be->cross_entropy_forward(DType::f32, l32.data(), s32.data(), d.logits.data(), d.targets.data(),
                              d.N, d.V, d.Vp);
    be->cross_entropy_backward(DType::f32, g32.data(), d.logits.data(), s32.data(),
                               d.targets.data(), 1.0f, d.N, d.V, d.Vp);
    Buf logits(dt, d.logits);
    be->cross_entropy_forward(dt, l.data(), s.data(), logits.data(), d.targets.data(), d.N, d.V,
                              d.Vp);
    // In place on the low-precision logits, as the engine runs it.
    be->cross_entropy_backward(dt, logits.data(), logits.data(), s.data(), d.targets.data(), 1.0f,
                               d.N, d.V, d.Vp);
    EXPECT_LT(test::rel_err(l, l32), 1e-6) << "losses are fp32 from the same logits";
    EXPECT_LT(test::rel_err(logits.get(), g32), tol) << dtype_name(dt);
  }
}

TEST(CrossEntropy, RejectsTargetOutsideVocabularyByIndex) {
  const Data d(3, 10, 16, 66);
  std::vector<int32_t> targets = d.targets;
  targets[2] = 10;
  std::vector<float> losses(3), lse(3);
  try {
    make_cpu_backend()->cross_entropy_forward(DType::f32, losses.data(), lse.data(),
                                              d.logits.data(), targets.data(), 3, 10, 16);
    FAIL() << "target 10 accepted with V = 10";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("targets[2] = 10"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hybrid::kernels
