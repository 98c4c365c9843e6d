// rope_forward/backward (the Llama family's rotary embedding) against Hugging
// Face's formula written out in double (q·cos + rotate_half(q)·sin, rotate_half
// = cat(−x2, x1), angle p·θ^(−2i/d) repeated over both halves), on a packed
// qkv row layout (only the q and k heads turn, v is untouched), with default
// and explicit positions (packed documents restart at 0); backward is the
// transpose: ⟨R x, g⟩ = ⟨x, Rᵀ g⟩, and forward then backward gives x back.
#include <gtest/gtest.h>

#include "reference.h"

namespace hybrid::kernels {
namespace {

using test::Buf;
using test::Vec;

constexpr int B = 2, T = 11, NH = 4, NKV = 2, D = 16;
constexpr int kRotated = NH + NKV, kStride = (NH + 2 * NKV) * D, N = B * T;
constexpr float kTheta = 10000.0f;

Vec rope_ref(const Vec& x, const std::vector<int32_t>& pos) {
  Vec out = x;
  for (int r = 0; r < N; ++r)
    for (int h = 0; h < kRotated; ++h)
      for (int i = 0; i < D / 2; ++i) {
        const double angle = pos[size_t(r)] * std::pow(double(kTheta), -2.0 * i / D);
        const size_t a = size_t(r) * kStride + size_t(h) * D + size_t(i), b = a + D / 2;
        out[a] = x[a] * std::cos(angle) - x[b] * std::sin(angle);
        out[b] = x[b] * std::cos(angle) + x[a] * std::sin(angle);
      }
  return out;
}

std::vector<int32_t> default_positions() {
  std::vector<int32_t> p(N);
  for (int r = 0; r < N; ++r) p[size_t(r)] = r % T;
  return p;
}

TEST(Rope, ForwardMatchesTheRotateHalfFormulaAndLeavesValuesAlone) {
  auto be = make_cpu_backend();
  const auto x = test::random_floats(size_t(N) * kStride, 71);
  // Two packed documents per row: positions restart at 0 at column 5.
  std::vector<int32_t> packed(N);
  for (int r = 0; r < N; ++r) packed[size_t(r)] = r % T < 5 ? r % T : r % T - 5;
  for (const bool explicit_positions : {false, true}) {
    auto y = x;
    const auto& pos = explicit_positions ? packed : default_positions();
    be->rope_forward(DType::f32, y.data(), explicit_positions ? packed.data() : nullptr, N, T,
                     kStride, kRotated, D, kTheta);
    const Vec ref = rope_ref(test::to_double(x), pos);
    // fp32 angles: |p·Δinv_freq| ≤ 10 · 6e-8, so a few 1e-7 of the unit scale.
    EXPECT_LT(test::rel_err(y, ref), 2e-6) << "explicit positions " << explicit_positions;
    for (int r = 0; r < N; ++r)
      for (int k = kRotated * D; k < kStride; ++k)
        ASSERT_EQ(y[size_t(r) * kStride + k], x[size_t(r) * kStride + k]) << "v moved";
  }
}

TEST(Rope, BackwardIsTheTransposeAndUndoesForward) {
  auto be = make_cpu_backend();
  const auto x = test::random_floats(size_t(N) * kStride, 72);
  const auto g = test::random_floats(size_t(N) * kStride, 73);
  auto rx = x, rtg = g;
  be->rope_forward(DType::f32, rx.data(), nullptr, N, T, kStride, kRotated, D, kTheta);
  be->rope_backward(DType::f32, rtg.data(), nullptr, N, T, kStride, kRotated, D, kTheta);
  const double lhs = test::dot(test::to_double(rx), test::to_double(g));
  const double rhs = test::dot(test::to_double(x), test::to_double(rtg));
  EXPECT_NEAR(lhs, rhs, 1e-5 * std::abs(lhs)) << "<R x, g> = <x, R^T g>";
  be->rope_backward(DType::f32, rx.data(), nullptr, N, T, kStride, kRotated, D, kTheta);
  EXPECT_LT(test::rel_err(rx, x), 1e-6) << "a rotation's transpose is its inverse";
}

TEST(Rope, LowPrecisionMatchesFp32) {
  auto be = make_cpu_backend();
  for (DType dt : {DType::bf16, DType::f16}) {
    const auto x = test::round_to(dt, test::random_floats(size_t(N) * kStride, 74));
    auto y32 = x;
    be->rope_forward(DType::f32, y32.data(), nullptr, N, T, kStride, kRotated, D, kTheta);
    Buf b(dt, x);
    be->rope_forward(dt, b.data(), nullptr, N, T, kStride, kRotated, D, kTheta);
    EXPECT_LT(test::rel_err(b.get(), y32), dt == DType::bf16 ? 1e-2 : 2e-3) << dtype_name(dt);
  }
}

}  // namespace
}  // namespace hybrid::kernels
