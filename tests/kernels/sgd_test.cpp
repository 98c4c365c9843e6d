// SGD (torch.optim.SGD semantics): two steps worked out by hand, then 25 steps
// of many elements against a naive per-element double loop in every mode
// (plain, momentum with dampening, nesterov, weight decay), with grad_scale,
// bf16 gradients and the fp16 working copy.
#include <gtest/gtest.h>

#include <cmath>

#include "reference.h"

namespace hybrid::kernels {
namespace {

using test::Buf;

TEST(Sgd, MomentumTwoStepsByHand) {
  // lr 0.1, momentum 0.9, dampening 0.5, wd 0.1, w0 = 1; gradients 1 then -0.5
  // (stored doubled, grad_scale 0.5).
  // Step 1: g = 1 + 0.1 = 1.1; buf = g = 1.1 (first step: no dampening); w = 1 - 0.11 = 0.89.
  // Step 2: g = -0.5 + 0.089 = -0.411; buf = 0.99 + 0.5·(-0.411) = 0.7845;
  //         w = 0.89 - 0.07845 = 0.81155.
  auto be = make_cpu_backend();
  float w = 1.0f, buf = 123.0f;  // the first step overwrites the buffer
  const float grads[2] = {2.0f, -1.0f};
  SgdParams p;
  p.lr = 0.1f;
  p.momentum = 0.9f;
  p.dampening = 0.5f;
  p.weight_decay = 0.1f;
  const double expect_w[2] = {0.89, 0.81155}, expect_buf[2] = {1.1, 0.7845};
  for (int t = 0; t < 2; ++t) {
    p.first_step = t == 0;
    bf16_t out{};
    be->sgd(p, &w, &buf, DType::f32, &grads[t], 0.5f, DType::bf16, &out, 1);
    EXPECT_NEAR(w, expect_w[t], 2e-7) << "step " << t + 1;
    EXPECT_NEAR(buf, expect_buf[t], 2e-7) << "step " << t + 1;
    EXPECT_EQ(out.bits, float_to_bf16(w).bits);
  }
}

struct Mode {
  const char* name;
  float momentum, dampening, weight_decay;
  bool nesterov;
};

TEST(Sgd, TwentyFiveStepsMatchANaiveLoop) {
  const size_t n = 70001;  // parallel chunks and a tail
  const Mode modes[] = {{"plain", 0.0f, 0.0f, 0.0f, false},
                        {"weight decay", 0.0f, 0.0f, 0.05f, false},
                        {"momentum, dampening", 0.9f, 0.1f, 0.01f, false},
                        {"nesterov", 0.8f, 0.0f, 0.02f, true}};
  auto be = make_cpu_backend();
  for (const Mode& mode : modes) {
    SCOPED_TRACE(mode.name);
    auto w = test::random_floats(n, 11);
    std::vector<float> buf(n, 0.0f);
    std::vector<double> rw(w.begin(), w.end()), rbuf(n, 0.0);
    SgdParams p;
    p.lr = 0.05f;
    p.momentum = mode.momentum;
    p.dampening = mode.dampening;
    p.weight_decay = mode.weight_decay;
    p.nesterov = mode.nesterov;
    Buf out(DType::f16, n);
    for (int t = 1; t <= 25; ++t) {
      const auto g = test::round_to(DType::bf16, test::random_floats(n, 100 + uint32_t(t)));
      Buf gb(DType::bf16, g);
      p.first_step = t == 1;
      be->sgd(p, w.data(), mode.momentum != 0.0f ? buf.data() : nullptr, DType::bf16, gb.data(),
              0.25f, DType::f16, out.data(), n);
      for (size_t i = 0; i < n; ++i) {  // torch.optim.SGD, element by element
        double d = 0.25 * g[i] + double(mode.weight_decay) * rw[i];
        if (mode.momentum != 0.0f) {
          rbuf[i] = t == 1 ? d : mode.momentum * rbuf[i] + (1.0 - mode.dampening) * d;
          d = mode.nesterov ? d + mode.momentum * rbuf[i] : rbuf[i];
        }
        rw[i] -= 0.05 * d;
      }
    }
    // 25 steps of fp32 rounding against double: a few 1e-7 relative per step.
    EXPECT_LT(test::rel_err(w, rw), 2e-6);
    if (mode.momentum != 0.0f) {
      EXPECT_LT(test::rel_err(buf, rbuf), 2e-6);
    }
    EXPECT_EQ(out.get(), test::round_to(DType::f16, w));
    EXPECT_GT(test::rel_err(w, test::random_floats(n, 11)), 0.05) << "the weights moved";
  }
}

TEST(Sgd, MomentumWithoutABufferIsRefused) {
  auto be = make_cpu_backend();
  float w = 1.0f, g = 1.0f;
  SgdParams p;
  p.momentum = 0.9f;
  EXPECT_THROW(be->sgd(p, &w, nullptr, DType::f32, &g, 1.0f, DType::f32, nullptr, 1),
               std::invalid_argument);
}

}  // namespace
}  // namespace hybrid::kernels
