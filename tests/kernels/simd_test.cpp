// The vectorisable math of kernels/cpu/simd.h against libm in double over dense
// sweeps: fast_exp within 4 ulp relative (2.4e-7) on [-87, 88], fast_tanh within
// 3e-7 absolute on [-10, 10], and the clamped ends behave (0 and ±1, never inf/NaN).
#include "kernels/cpu/simd.h"

#include <gtest/gtest.h>

#include <cmath>

namespace hybrid::kernels {
namespace {

TEST(Simd, FastExpAccuracy) {
  double worst = 0.0;
  for (double x = -87.0; x <= 88.0; x += 3e-4) {
    const float f = float(x);
    const double ref = std::exp(double(f));
    worst = std::max(worst, std::abs(cpu::fast_exp(f) - ref) / ref);
  }
  std::printf("fast_exp worst relative error %.2e\n", worst);
  EXPECT_LT(worst, 2.4e-7);
  EXPECT_EQ(cpu::fast_exp(-88.0f), 0.0f);
  EXPECT_EQ(cpu::fast_exp(-1e4f), 0.0f);
  EXPECT_TRUE(std::isfinite(cpu::fast_exp(1e4f)));
  EXPECT_EQ(cpu::fast_exp(0.0f), 1.0f);
}

TEST(Simd, FastTanhAccuracy) {
  double worst = 0.0;
  for (double x = -10.0; x <= 10.0; x += 2e-5) {
    const float f = float(x);
    worst = std::max(worst, std::abs(cpu::fast_tanh(f) - std::tanh(double(f))));
  }
  std::printf("fast_tanh worst absolute error %.2e\n", worst);
  EXPECT_LT(worst, 3e-7);
  EXPECT_EQ(cpu::fast_tanh(0.0f), 0.0f);
  EXPECT_EQ(cpu::fast_tanh(50.0f), 1.0f);
  EXPECT_EQ(cpu::fast_tanh(-50.0f), -1.0f);
}

TEST(Simd, ViewF32CopiesOnlyLowPrecision) {
  float buf[4];
  const float f32[4] = {1, 2, 3, 4};
  EXPECT_EQ(cpu::view_f32(f32, buf, 4), f32);
  const bf16_t b[4] = {float_to_bf16(1), float_to_bf16(2), float_to_bf16(3), float_to_bf16(4)};
  const float* v = cpu::view_f32(b, buf, 4);
  EXPECT_EQ(v, buf);
  EXPECT_EQ(v[3], 4.0f);
}

}  // namespace
}  // namespace hybrid::kernels
