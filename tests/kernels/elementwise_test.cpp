// residual_forward, convert, add, scale and grad_stats against plain loops in
// double, across dtypes; grad_stats' inf/NaN detection in every dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "reference.h"

namespace hybrid::kernels {
namespace {

using test::Buf;
using test::Vec;

constexpr size_t kN = 100003;  // odd: vector tails; > the parallel threshold
constexpr DType kAll[] = {DType::f32, DType::f16, DType::bf16};

// Half an ulp of the destination dtype, relative (round to nearest).
double rounding(DType dt) { return dt == DType::f32 ? 6e-8 : dt == DType::f16 ? 4.9e-4 : 3.9e-3; }

TEST(Residual, MatchesNaiveAndMayAlias) {
  auto be = make_cpu_backend();
  for (DType dt : kAll) {
    const auto a = test::round_to(dt, test::random_floats(kN, 71));
    const auto b = test::round_to(dt, test::random_floats(kN, 72));
    Buf ba(dt, a), bb(dt, b), out(dt, kN);
    be->residual_forward(dt, out.data(), ba.data(), bb.data(), kN);
    Vec ref(kN);
    for (size_t i = 0; i < kN; ++i) ref[i] = double(a[i]) + b[i];
    // Each element is one rounding of the exact sum: |err| <= ulp/2 · |sum| <= ulp/2 · max.
    EXPECT_LE(test::rel_err(out.get(), ref), rounding(dt)) << dtype_name(dt);
    be->residual_forward(dt, ba.data(), ba.data(), bb.data(), kN);  // out aliases a
    EXPECT_EQ(ba.get(), out.get()) << dtype_name(dt);
  }
}

TEST(Convert, AllDtypePairsRoundOnce) {
  auto be = make_cpu_backend();
  const auto src = test::random_floats(kN, 73, -100.0f, 100.0f);
  for (DType s : kAll)
    for (DType d : kAll) {
      const auto exact = test::round_to(s, src);  // what the source holds
      Buf bs(s, exact), bd(d, kN);
      be->convert(d, bd.data(), s, bs.data(), kN);
      // Bit-exact with the scalar round-to-nearest-even conversion of dtype.h.
      EXPECT_EQ(bd.get(), test::round_to(d, exact)) << dtype_name(s) << " -> " << dtype_name(d);
    }
}

TEST(Add, AcrossDtypesWithAlpha) {
  auto be = make_cpu_backend();
  for (DType dd : kAll)
    for (DType sd : kAll) {
      const auto dst0 = test::round_to(dd, test::random_floats(kN, 74));
      const auto src = test::round_to(sd, test::random_floats(kN, 75));
      Buf bdst(dd, dst0), bsrc(sd, src);
      be->add(dd, bdst.data(), sd, bsrc.data(), kN, -0.5f);
      Vec ref(kN);
      for (size_t i = 0; i < kN; ++i) ref[i] = double(dst0[i]) - 0.5 * src[i];
      EXPECT_LE(test::rel_err(bdst.get(), ref), rounding(dd) + 1e-7)
          << dtype_name(sd) << " into " << dtype_name(dd);
    }
}

TEST(Scale, EveryDtype) {
  auto be = make_cpu_backend();
  for (DType dt : kAll) {
    const auto x = test::round_to(dt, test::random_floats(kN, 76));
    Buf b(dt, x);
    be->scale(dt, b.data(), kN, 3.0f);
    Vec ref(kN);
    for (size_t i = 0; i < kN; ++i) ref[i] = 3.0 * x[i];
    EXPECT_LE(test::rel_err(b.get(), ref), rounding(dt)) << dtype_name(dt);
  }
}

TEST(GradStats, SumOfSquaresInDouble) {
  auto be = make_cpu_backend();
  for (DType dt : kAll) {
    const auto x = test::round_to(dt, test::random_floats(kN, 77, -3.0f, 3.0f));
    Buf b(dt, x);
    const GradStats st = be->grad_stats(dt, b.data(), kN);
    double ref = 0.0;
    for (float v : x) ref += double(v) * v;
    EXPECT_NEAR(st.sum_squares, ref, 1e-12 * ref) << dtype_name(dt);
    EXPECT_FALSE(st.non_finite) << dtype_name(dt);
  }
  // Squares beyond fp32 range (1e30² = 1e60) are finite in double: not flagged.
  std::vector<float> big(100, 1e30f);
  const GradStats st = be->grad_stats(DType::f32, big.data(), big.size());
  EXPECT_FALSE(st.non_finite);
  EXPECT_NEAR(st.sum_squares, 100 * 1e60, 1e-6 * 100 * 1e60);
}

TEST(GradStats, DetectsInfAndNaNAnywhere) {
  auto be = make_cpu_backend();
  const float specials[] = {std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()};
  for (DType dt : kAll)
    for (float special : specials)
      for (size_t pos : {size_t(0), size_t(4097), kN - 1}) {  // first, middle, tail element
        auto x = test::random_floats(kN, 78);
        x[pos] = special;
        Buf b(dt, x);
        EXPECT_TRUE(be->grad_stats(dt, b.data(), kN).non_finite)
            << dtype_name(dt) << " value " << special << " at " << pos;
      }
  // Overflow on storage: 1e5 does not fit fp16 and becomes inf.
  auto x = test::random_floats(1000, 79);
  x[10] = 1e5f;
  Buf h(DType::f16, x);
  EXPECT_TRUE(be->grad_stats(DType::f16, h.data(), x.size()).non_finite);
  Buf bf(DType::bf16, x);
  EXPECT_FALSE(be->grad_stats(DType::bf16, bf.data(), x.size()).non_finite);
}

}  // namespace
}  // namespace hybrid::kernels
