// Lamb (DeepSpeed's FusedLamb) in the backend's two passes: 25 steps over
// segments of very different sizes and scales against a naive per-element
// double implementation of FusedLamb (trust ratio clamped at both ends, a
// zero-weight segment whose ratio is 1), with and without bias correction and
// with eps inside the square root; and the promise the offloaded optimizer
// relies on: splitting a call at multiples of 2048 changes no bit.
#include <gtest/gtest.h>

#include <cmath>

#include "reference.h"

namespace hybrid::kernels {
namespace {

using test::Buf;

// FusedLamb, written out in double from DeepSpeed's description: per tensor,
// m, v ← Adam moments of g; u = m / (sqrt(v) + eps) + wd·w;
// ratio = clamp(||w|| / ||u||, min, max) (1 if either norm is 0);
// w ← w − lr·sqrt(1 − β2^t)/(1 − β1^t)·ratio·u.
struct NaiveLamb {
  LambParams p;
  float max_coeff = 10.0f, min_coeff = 0.01f;
  std::vector<int64_t> bounds;
  std::vector<double> w, m, v;
  std::vector<double> w2, u2;  // the last step's sums per segment

  double update(size_t i) const {
    const double denom = p.eps_inside_sqrt ? std::sqrt(v[i] + p.eps) : std::sqrt(v[i]) + p.eps;
    return m[i] / denom + double(p.weight_decay) * w[i];
  }
  double ratio(size_t s) const {
    const double a = std::sqrt(w2[s]), b = std::sqrt(u2[s]);
    if (a == 0.0 || b == 0.0) return 1.0;
    return std::clamp(a / b, double(min_coeff), double(max_coeff));
  }
  void step(const std::vector<float>& g, double grad_scale) {
    const size_t segs = bounds.size() - 1;
    w2.assign(segs, 0.0), u2.assign(segs, 0.0);
    for (size_t s = 0; s < segs; ++s)
      for (int64_t i = bounds[s]; i < bounds[s + 1]; ++i) {
        const double gi = grad_scale * g[size_t(i)];
        m[size_t(i)] = p.beta1 * m[size_t(i)] + (1.0 - p.beta1) * gi;
        v[size_t(i)] = p.beta2 * v[size_t(i)] + (1.0 - p.beta2) * gi * gi;
        w2[s] += w[size_t(i)] * w[size_t(i)];
        u2[s] += update(size_t(i)) * update(size_t(i));
      }
    double step_size = p.lr;
    if (p.bias_correction)
      step_size *= std::sqrt(1.0 - std::pow(double(p.beta2), double(p.step))) /
                   (1.0 - std::pow(double(p.beta1), double(p.step)));
    for (size_t s = 0; s < segs; ++s)
      for (int64_t i = bounds[s]; i < bounds[s + 1]; ++i)
        w[size_t(i)] -= step_size * ratio(s) * update(size_t(i));
  }
};

// Segment sizes and weight scales: a huge-weight segment (ratio clamped to
// max_coeff), a tiny-weight one (clamped to min_coeff), all-zero weights (ratio
// 1), one element, empty, and one large enough for parallel chunks.
struct Layout {
  std::vector<int64_t> bounds;
  std::vector<float> w;
};

Layout make_layout() {
  const int64_t sizes[] = {3000, 10, 5000, 1, 0, 70001, 2048, 777};
  const float scales[] = {1.0f, 1e3f, 1e-6f, 0.5f, 1.0f, 0.05f, 0.0f, 2.0f};
  Layout l;
  l.bounds.push_back(0);
  for (size_t s = 0; s < std::size(sizes); ++s) {
    const auto r = test::random_floats(size_t(sizes[s]), 300 + uint32_t(s));
    for (float x : r) l.w.push_back(scales[s] * x);
    l.bounds.push_back(l.bounds.back() + sizes[s]);
  }
  return l;
}

void run_against_naive(bool bias_correction, bool eps_inside_sqrt) {
  auto be = make_cpu_backend();
  const Layout l = make_layout();
  const size_t n = l.w.size();
  const int segs = int(l.bounds.size()) - 1;
  NaiveLamb ref;
  ref.p.lr = 2e-3f;
  ref.p.beta1 = 0.85f;
  ref.p.beta2 = 0.99f;
  ref.p.eps = 1e-6f;
  ref.p.weight_decay = 0.01f;
  ref.p.bias_correction = bias_correction;
  ref.p.eps_inside_sqrt = eps_inside_sqrt;
  ref.bounds = l.bounds;
  ref.w.assign(l.w.begin(), l.w.end());
  ref.m.assign(n, 0.0), ref.v.assign(n, 0.0);
  auto w = l.w;
  std::vector<float> m(n, 0.0f), v(n, 0.0f);
  Buf out(DType::bf16, n);
  int clamped_high = 0, clamped_low = 0, unit = 0;
  for (int t = 1; t <= 25; ++t) {
    ref.p.step = t;
    const auto g = test::round_to(DType::bf16, test::random_floats(n, 500 + uint32_t(t)));
    ref.step(g, 0.5);
    Buf gb(DType::bf16, g);
    std::vector<double> sums(2 * size_t(segs), 0.0);
    be->lamb_moments(ref.p, w.data(), m.data(), v.data(), DType::bf16, gb.data(), 0.5f,
                     l.bounds.data(), segs, sums.data());
    std::vector<float> coeffs(static_cast<size_t>(segs));
    for (int s = 0; s < segs; ++s) {
      SCOPED_TRACE("step " + std::to_string(t) + ", segment " + std::to_string(s));
      EXPECT_NEAR(sums[2 * s], ref.w2[size_t(s)], 1e-5 * ref.w2[size_t(s)] + 1e-30);
      EXPECT_NEAR(sums[2 * s + 1], ref.u2[size_t(s)], 1e-5 * ref.u2[size_t(s)] + 1e-30);
      coeffs[size_t(s)] = float(ref.ratio(size_t(s)));
      clamped_high += coeffs[size_t(s)] == 10.0f;
      clamped_low += coeffs[size_t(s)] == 0.01f;
      unit += coeffs[size_t(s)] == 1.0f;
    }
    be->lamb_update(ref.p, w.data(), m.data(), v.data(), l.bounds.data(), segs, coeffs.data(),
                    DType::bf16, out.data());
  }
  EXPECT_LT(test::rel_err(m, ref.m), 1e-6);
  EXPECT_LT(test::rel_err(v, ref.v), 1e-6);
  for (int s = 0; s < segs; ++s) {  // per segment: their scales differ by 1e9
    const size_t b = size_t(l.bounds[size_t(s)]), e = size_t(l.bounds[size_t(s) + 1]);
    const std::vector<float> got(w.begin() + b, w.begin() + e);
    const std::vector<double> want(ref.w.begin() + b, ref.w.begin() + e);
    EXPECT_LT(test::rel_err(got, want), 2e-6) << "segment " << s;
  }
  EXPECT_EQ(out.get(), test::round_to(DType::bf16, w));
  EXPECT_GT(clamped_high, 0) << "the 1e3-scale segment hits max_coeff";
  EXPECT_GT(clamped_low, 0) << "the 1e-6-scale segment hits min_coeff";
  EXPECT_GT(unit, 0) << "the zero segment's ratio is 1";
}

TEST(Lamb, TwentyFiveStepsMatchANaiveFusedLamb) { run_against_naive(true, false); }
TEST(Lamb, WithoutBiasCorrection) { run_against_naive(false, false); }
TEST(Lamb, EpsInsideTheSquareRoot) { run_against_naive(true, true); }

// The offloaded optimizer calls pass 1 chunk by chunk (chunks are multiples of
// 2048) and pass 2 likewise: sums and weights must be bit for bit those of one call.
TEST(Lamb, SplittingAtBlockMultiplesChangesNoBit) {
  auto be = make_cpu_backend();
  const Layout l = make_layout();
  const size_t n = l.w.size();
  const int segs = int(l.bounds.size()) - 1;
  LambParams p;
  p.lr = 1e-2f;
  p.weight_decay = 0.1f;
  const std::vector<size_t> cuts = {0, 4096, 8192, 6 * 4096 + 2048, n};
  auto w1 = l.w, w2 = l.w;
  std::vector<float> m1(n, 0.0f), v1(n, 0.0f), m2(n, 0.0f), v2(n, 0.0f);
  for (int t = 1; t <= 3; ++t) {
    p.step = t;
    const auto g = test::random_floats(n, 900 + uint32_t(t));
    std::vector<double> whole(2 * size_t(segs), 0.0), parts(2 * size_t(segs), 0.0);
    be->lamb_moments(p, w1.data(), m1.data(), v1.data(), DType::f32, g.data(), 1.0f,
                     l.bounds.data(), segs, whole.data());
    // The same range in parts: each part's segments are the global ones clipped.
    std::vector<std::pair<std::vector<int64_t>, size_t>> local;  // (bounds, first segment)
    for (size_t c = 0; c + 1 < cuts.size(); ++c) {
      std::vector<int64_t> b = {0};
      size_t first = 0;
      while (l.bounds[first + 1] <= int64_t(cuts[c]) && first + 1 < size_t(segs)) ++first;
      for (size_t s = first; b.back() < int64_t(cuts[c + 1] - cuts[c]); ++s)
        b.push_back(std::min<int64_t>(l.bounds[s + 1], int64_t(cuts[c + 1])) - int64_t(cuts[c]));
      be->lamb_moments(p, w2.data() + cuts[c], m2.data() + cuts[c], v2.data() + cuts[c], DType::f32,
                       g.data() + cuts[c], 1.0f, b.data(), int(b.size()) - 1,
                       parts.data() + 2 * first);
      local.emplace_back(std::move(b), first);
    }
    ASSERT_EQ(whole, parts) << "step " << t;
    std::vector<float> coeffs(static_cast<size_t>(segs));
    for (int s = 0; s < segs; ++s)
      coeffs[size_t(s)] = float(std::sqrt(whole[2 * s] / std::max(whole[2 * s + 1], 1e-30)));
    be->lamb_update(p, w1.data(), m1.data(), v1.data(), l.bounds.data(), segs, coeffs.data(),
                    DType::f32, nullptr);
    for (size_t c = 0; c + 1 < cuts.size(); ++c)
      be->lamb_update(p, w2.data() + cuts[c], m2.data() + cuts[c], v2.data() + cuts[c],
                      local[c].first.data(), int(local[c].first.size()) - 1,
                      coeffs.data() + local[c].second, DType::f32, nullptr);
    ASSERT_EQ(w1, w2) << "step " << t;
    ASSERT_EQ(m1, m2) << "step " << t;
  }
}

TEST(Lamb, BadBoundsAndStepAreRefused) {
  auto be = make_cpu_backend();
  float w[2] = {1, 1}, m[2] = {}, v[2] = {}, g[2] = {1, 1};
  double sums[4] = {};
  LambParams p;
  const int64_t decreasing[3] = {0, 2, 1};
  EXPECT_THROW(be->lamb_moments(p, w, m, v, DType::f32, g, 1.0f, decreasing, 2, sums),
               std::invalid_argument);
  const int64_t offset[2] = {1, 2};
  EXPECT_THROW(be->lamb_moments(p, w, m, v, DType::f32, g, 1.0f, offset, 1, sums),
               std::invalid_argument);
  p.step = 0;
  const int64_t ok[2] = {0, 2};
  EXPECT_THROW(be->lamb_moments(p, w, m, v, DType::f32, g, 1.0f, ok, 1, sums),
               std::invalid_argument);
}

}  // namespace
}  // namespace hybrid::kernels
