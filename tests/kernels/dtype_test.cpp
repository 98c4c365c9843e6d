// fp16/bf16 conversions: the portable scalar code, the F16C scalar path and the
// vectorised bulk converters of kernels/cpu/simd.h must agree bit for bit, and
// each must be exact on the edge cases (subnormals, ties, inf, NaN, overflow).
#include "kernels/dtype.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "kernels/cpu/simd.h"

namespace hybrid::kernels {
namespace {

uint16_t f16_bits(float f) { return float_to_f16_slow(f).bits; }
uint16_t bf16_bits(float f) { return float_to_bf16(f).bits; }
float from_bits(uint32_t u) { return std::bit_cast<float>(u); }

TEST(DType, ParseNamesAndRejectUnknown) {
  EXPECT_EQ(parse_dtype("fp32"), DType::f32);
  EXPECT_EQ(parse_dtype("float16"), DType::f16);
  EXPECT_EQ(parse_dtype("half"), DType::f16);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
  try {
    parse_dtype("fp8");
    FAIL() << "fp8 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("fp8"), std::string::npos);
  }
}

TEST(DType, F16EdgeCases) {
  EXPECT_EQ(f16_bits(0.0f), 0x0000);
  EXPECT_EQ(f16_bits(-0.0f), 0x8000);
  EXPECT_EQ(f16_bits(1.0f), 0x3c00);
  EXPECT_EQ(f16_bits(65504.0f), 0x7bff);   // largest finite
  EXPECT_EQ(f16_bits(65519.99f), 0x7bff);  // just below the midpoint
  EXPECT_EQ(f16_bits(65520.0f), 0x7c00);   // midpoint, ties to even = inf
  EXPECT_EQ(f16_bits(1e10f), 0x7c00);      // overflow
  EXPECT_EQ(f16_bits(-1e10f), 0xfc00);
  EXPECT_EQ(f16_bits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(f16_bits(-std::numeric_limits<float>::infinity()), 0xfc00);
  const uint16_t nan = f16_bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
  EXPECT_NE(f16_bits(from_bits(0x7f800001u)) & 0x03ff, 0);  // signalling NaN stays NaN
  EXPECT_EQ(f16_bits(std::ldexp(1.0f, -24)), 0x0001);       // smallest subnormal
  EXPECT_EQ(f16_bits(std::ldexp(1.0f, -25)), 0x0000);       // tie between 0 and 1 ulp: even
  EXPECT_EQ(f16_bits(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(f16_bits(3 * std::ldexp(1.0f, -25)), 0x0002);         // tie between 1 and 2: even
  EXPECT_EQ(f16_bits(1023 * std::ldexp(1.0f, -24)), 0x03ff);      // largest subnormal
  EXPECT_EQ(f16_bits(std::ldexp(1.0f, -14)), 0x0400);             // smallest normal
  EXPECT_EQ(f16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie: down to even
  EXPECT_EQ(f16_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie: up to even
  EXPECT_EQ(f16_to_float_slow({0x0001}), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_float_slow({0x03ff}), 1023 * std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_float_slow({0xfbff}), -65504.0f);
  EXPECT_TRUE(std::isinf(f16_to_float_slow({0x7c00})));
  EXPECT_TRUE(std::isnan(f16_to_float_slow({0x7e00})));
}

TEST(DType, Bf16EdgeCases) {
  EXPECT_EQ(bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie: down to even
  EXPECT_EQ(bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie: up to even
  EXPECT_EQ(bf16_bits(std::nextafter(1.0f + std::ldexp(1.0f, -8), 2.0f)), 0x3f81);
  EXPECT_EQ(bf16_bits(std::numeric_limits<float>::max()), 0x7f80);  // rounds to inf
  EXPECT_EQ(bf16_bits(from_bits(0x7f7f7fffu)), 0x7f7f);             // stays finite
  EXPECT_EQ(bf16_bits(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(bf16_bits(from_bits(0x7f800001u)), 0x7fc0);  // signalling NaN: quiet, not inf
  EXPECT_EQ(bf16_bits(from_bits(0x00018000u)), 0x0002);  // subnormal tie: up to even
  EXPECT_EQ(bf16_bits(from_bits(0x00008000u)), 0x0000);  // subnormal tie: down to even
  EXPECT_EQ(bf16_to_float({0x0001}), from_bits(0x00010000u));
}

// Every fp16 value converts to fp32 identically on the three paths, and back.
TEST(DType, F16AllBitPatternsAgree) {
  std::vector<f16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i].bits = uint16_t(i);
  std::vector<float> vec(65536);
  cpu::to_f32(vec.data(), all.data(), all.size());
  for (uint32_t i = 0; i < 65536; ++i) {
    const float slow = f16_to_float_slow(all[i]);
    const float fast = f16_to_float(all[i]);
    if (std::isnan(slow)) {
      ASSERT_TRUE(std::isnan(fast) && std::isnan(vec[i])) << "bits " << i;
      continue;
    }
    ASSERT_EQ(std::bit_cast<uint32_t>(slow), std::bit_cast<uint32_t>(fast)) << "bits " << i;
    ASSERT_EQ(std::bit_cast<uint32_t>(slow), std::bit_cast<uint32_t>(vec[i])) << "bits " << i;
    ASSERT_EQ(float_to_f16_slow(slow).bits, i) << "round trip of bits " << i;
  }
}

// fp32 → fp16/bf16 over 2M random bit patterns (every exponent, NaNs included):
// slow scalar, fast scalar and vector paths give the same bits (NaN: both NaN).
TEST(DType, RandomFloatsAgreeAcrossPaths) {
  std::mt19937 gen(7);
  const size_t n = size_t(1) << 21;
  std::vector<float> src(n);
  for (auto& x : src) x = from_bits(gen());
  // Dense coverage of the fp16 range too (exponents 2^-26 .. 2^17).
  for (size_t i = 0; i < n / 2; ++i)
    src[i] = from_bits((gen() & 0x80000000u) | ((101u + gen() % 43u) << 23) | (gen() & 0x7fffffu));
  std::vector<f16_t> h(n);
  std::vector<bf16_t> b(n);
  cpu::from_f32(h.data(), src.data(), n);
  cpu::from_f32(b.data(), src.data(), n);
  for (size_t i = 0; i < n; ++i) {
    const bool nan = std::isnan(src[i]);
    const uint16_t hs = float_to_f16_slow(src[i]).bits, hf = float_to_f16(src[i]).bits;
    if (nan) {
      ASSERT_TRUE((hs & 0x7c00) == 0x7c00 && (hs & 0x3ff) && (hf & 0x7c00) == 0x7c00 &&
                  (hf & 0x3ff) && (h[i].bits & 0x7c00) == 0x7c00 && (h[i].bits & 0x3ff));
      ASSERT_TRUE(std::isnan(bf16_to_float(b[i])));
      continue;
    }
    ASSERT_EQ(hs, hf) << "value " << src[i];
    ASSERT_EQ(hs, h[i].bits) << "value " << src[i];
    ASSERT_EQ(float_to_bf16(src[i]).bits, b[i].bits) << "value " << src[i];
  }
}

// Tails (n not a multiple of 8) go through the scalar path of the same converter.
TEST(DType, BulkConvertTails) {
  for (size_t n : {1u, 7u, 9u, 17u}) {
    std::vector<float> src(n), back(n);
    for (size_t i = 0; i < n; ++i) src[i] = 0.1f * float(i) - 0.3f;
    std::vector<bf16_t> b(n);
    cpu::from_f32(b.data(), src.data(), n);
    cpu::to_f32(back.data(), b.data(), n);
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(back[i], bf16_to_float(float_to_bf16(src[i])));
  }
}

}  // namespace
}  // namespace hybrid::kernels
