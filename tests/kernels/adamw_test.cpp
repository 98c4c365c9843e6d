// Fused AdamW/Adam: a two-step sequence worked out by hand, then many elements
// against a double loop in both weight-decay modes, with grad_scale, low-precision
// gradients and the low-precision param_out copy.
#include <gtest/gtest.h>

#include <cmath>

#include "reference.h"

namespace hybrid::kernels {
namespace {

using test::Buf;

struct Step {
  double w, m, v;
};

// lr 0.1, betas (0.9, 0.99), eps 1e-8, wd 0.1, w0 = 1; gradients 0.5 then −0.25,
// stored doubled and unscaled by grad_scale = 0.5 (exact in binary).
void run_two_steps(bool decoupled, bool bias_correction, const Step expected[2]) {
  auto be = make_cpu_backend();
  float w = 1.0f, m = 0.0f, v = 0.0f;
  const float grads[2] = {1.0f, -0.5f};
  AdamWParams p;
  p.lr = 0.1f;
  p.beta1 = 0.9f;
  p.beta2 = 0.99f;
  p.eps = 1e-8f;
  p.weight_decay = 0.1f;
  p.decoupled_weight_decay = decoupled;
  p.bias_correction = bias_correction;
  for (int t = 0; t < 2; ++t) {
    p.step = t + 1;
    bf16_t out{};
    be->adamw(p, &w, &m, &v, DType::f32, &grads[t], 0.5f, DType::bf16, &out, 1);
    // fp32 arithmetic on constants that are not exact in binary (1 − 0.99f is off
    // by 1e-6 relative): 2e-6 relative on m and v, 2e-7 absolute on w.
    EXPECT_NEAR(w, expected[t].w, 2e-7) << "step " << t + 1;
    EXPECT_NEAR(m, expected[t].m, 2e-6 * expected[t].m) << "step " << t + 1;
    EXPECT_NEAR(v, expected[t].v, 2e-6 * expected[t].v) << "step " << t + 1;
    EXPECT_EQ(out.bits, float_to_bf16(w).bits) << "param_out is the rounded master weight";
  }
}

TEST(AdamW, DecoupledTwoStepsByHand) {
  // Step 1: w = 1 − 0.1·0.1·1 = 0.99; m = 0.05; v = 0.0025; m̂ = 0.5, v̂ = 0.25;
  //         w = 0.99 − 0.1·0.5/(0.5 + 1e-8) = 0.890000002.
  // Step 2: w = 0.89·0.99 = 0.8811; m = 0.045 − 0.025 = 0.02; v = 0.002475 + 0.000625 = 0.0031;
  //         m̂ = 0.02/0.19, v̂ = 0.0031/0.0199; w = 0.8811 − 0.1·m̂/(√v̂ + 1e-8) = 0.85443006.
  const Step expected[2] = {{0.890000002, 0.05, 0.0025}, {0.8544300597, 0.02, 0.0031}};
  run_two_steps(true, true, expected);
}

TEST(AdamW, L2TwoStepsByHand) {
  // Step 1: g = 0.5 + 0.1·1 = 0.6; m = 0.06; v = 0.0036; w = 1 − 0.1·0.6/0.6 = 0.9 (+ eps term).
  // Step 2: g = −0.25 + 0.1·0.9 = −0.16; m = 0.054 − 0.016 = 0.038; v = 0.003564 + 0.000256 =
  // 0.00382.
  const Step expected[2] = {{0.9000000017, 0.06, 0.0036}, {0.8543516770, 0.038, 0.00382}};
  run_two_steps(false, true, expected);
}

TEST(AdamW, WithoutBiasCorrection) {
  // Step 1: m = 0.05, v = 0.0025, w = 0.99 − 0.1·0.05/(0.05 + 1e-8) = 0.89000002.
  const Step expected[2] = {{0.89000002, 0.05, 0.0025}, {0.8451789658, 0.02, 0.0031}};
  run_two_steps(true, false, expected);
}

// Many elements (parallel chunks, vector tails) vs a double loop; bf16 gradients, fp16 out.
TEST(AdamW, ManyElementsMatchDoubleLoop) {
  const size_t n = 70001;
  auto be = make_cpu_backend();
  for (bool decoupled : {true, false}) {
    auto w = test::random_floats(n, 81), m = test::random_floats(n, 82, -0.1f, 0.1f),
         v = test::random_floats(n, 83, 0.0f, 0.01f);
    const auto g = test::round_to(DType::bf16, test::random_floats(n, 84));
    std::vector<double> rw(w.begin(), w.end()), rm(m.begin(), m.end()), rv(v.begin(), v.end());
    AdamWParams p;
    p.lr = 1e-2f;
    p.weight_decay = 0.05f;
    p.decoupled_weight_decay = decoupled;
    p.step = 7;
    Buf gb(DType::bf16, g), out(DType::f16, n);
    be->adamw(p, w.data(), m.data(), v.data(), DType::bf16, gb.data(), 0.25f, DType::f16,
              out.data(), n);
    const double bc1 = 1 - std::pow(0.9, 7), bc2 = 1 - std::pow(0.999, 7);
    for (size_t i = 0; i < n; ++i) {
      double gi = 0.25 * g[i];
      if (decoupled)
        rw[i] -= 1e-2 * 0.05 * rw[i];
      else
        gi += 0.05 * rw[i];
      rm[i] = 0.9 * rm[i] + 0.1 * gi;
      rv[i] = 0.999 * rv[i] + 0.001 * gi * gi;
      rw[i] -= 1e-2 * (rm[i] / bc1) / (std::sqrt(rv[i] / bc2) + 1e-8);
    }
    EXPECT_LT(test::rel_err(w, rw), 1e-6);
    EXPECT_LT(test::rel_err(m, rm), 1e-6);
    EXPECT_LT(test::rel_err(v, rv), 1e-6);
    EXPECT_EQ(out.get(), test::round_to(DType::f16, w));
  }
}

TEST(AdamW, NullParamOutAndBadStep) {
  auto be = make_cpu_backend();
  float w = 1.0f, m = 0.0f, v = 0.0f, g = 1.0f;
  AdamWParams p;
  be->adamw(p, &w, &m, &v, DType::f32, &g, 1.0f, DType::bf16, nullptr, 1);
  EXPECT_LT(w, 1.0f);
  p.step = 0;
  EXPECT_THROW(be->adamw(p, &w, &m, &v, DType::f32, &g, 1.0f, DType::bf16, nullptr, 1),
               std::invalid_argument);
}

}  // namespace
}  // namespace hybrid::kernels
