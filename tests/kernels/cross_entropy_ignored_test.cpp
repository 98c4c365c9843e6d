// Cross-entropy with ignored rows (a negative target: padding, a packed row's
// unused tail) on the CPU backend, whole vocabulary and vocabulary shards: an
// ignored row's loss is exactly 0 and its gradient row exactly 0 (padding
// columns included); every other row, and every row's logsumexp, keeps the bits
// of the same call with real targets everywhere (the ops treat rows
// independently, so ignoring one changes nothing else). The naive reference
// (reference.h: loss 0 for a negative target) checks the losses too (fp32,
// 1e-5). Targets -1, -100 (PyTorch's ignore_index) and INT32_MIN.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <string>

#include "reference.h"

namespace hybrid::kernels {
namespace {

using test::Buf;
using test::Vec;

constexpr int kRows = 9;
constexpr int kIgnoredRows[] = {1, 4, 8};
constexpr int32_t kIgnoredTargets[] = {-1, -100, std::numeric_limits<int32_t>::min()};
constexpr float kScale = 0.25f;  // dloss

bool ignored_row(int i) {
  return std::find(std::begin(kIgnoredRows), std::end(kIgnoredRows), i) != std::end(kIgnoredRows);
}

// Logits [kRows, Vp] in dt (garbage in the padding) and two target vectors: real
// everywhere, and the same with kIgnoredRows ignored.
struct IgnoredRows {
  int V, Vp;
  std::vector<float> logits;
  std::vector<int32_t> real, ignoring;
  IgnoredRows(int v, int vp, DType dt)
      : V(v),
        Vp(vp),
        logits(test::round_to(dt, test::random_floats(size_t(kRows) * vp, 501, -6.0f, 6.0f))),
        real(test::random_ints(kRows, v, 502)),
        ignoring(real) {
    for (int i = 0; i < kRows; ++i)
      for (int j = V; j < Vp; ++j) logits[size_t(i) * Vp + j] = 1e30f;
    for (size_t k = 0; k < std::size(kIgnoredRows); ++k)
      ignoring[size_t(kIgnoredRows[k])] = kIgnoredTargets[k];
  }
};

std::string describe_rows(DType dt, int V, int Vp) {
  return std::string(dtype_name(dt)) + " V = " + std::to_string(V) + " of " + std::to_string(Vp);
}

// Row i of real vs ignoring: the gradient row is 0 where ignored, else the bits of `real`.
void expect_rows(const std::vector<float>& ignoring, const std::vector<float>& real, int width,
                 const std::string& at) {
  for (int i = 0; i < kRows; ++i)
    for (int j = 0; j < width; ++j) {
      const size_t k = size_t(i) * width + j;
      if (ignored_row(i))
        ASSERT_EQ(ignoring[k], 0.0f) << at << ": ignored row " << i << ", column " << j;
      else
        ASSERT_EQ(ignoring[k], real[k]) << at << ": row " << i << ", column " << j;
    }
}

// V = 3000 crosses the CPU kernel's 2048-column chunks.
TEST(CrossEntropyIgnored, WholeVocabularyLossZeroGradientRowZeroOtherRowsUnchanged) {
  auto be = make_cpu_backend();
  for (DType dt : {DType::f32, DType::bf16}) {
    const IgnoredRows d(3000, 3072, dt);
    const std::string at = describe_rows(dt, d.V, d.Vp);
    Buf logits(dt, d.logits);
    std::vector<float> l_real(kRows), lse_real(kRows), l_ign(kRows, 9.0f), lse_ign(kRows);
    be->cross_entropy_forward(dt, l_real.data(), lse_real.data(), logits.data(), d.real.data(),
                              kRows, d.V, d.Vp);
    be->cross_entropy_forward(dt, l_ign.data(), lse_ign.data(), logits.data(), d.ignoring.data(),
                              kRows, d.V, d.Vp);
    EXPECT_EQ(lse_ign, lse_real) << at;
    for (int i = 0; i < kRows; ++i)
      EXPECT_EQ(l_ign[i], ignored_row(i) ? 0.0f : l_real[i]) << at << ", row " << i;
    Vec rl, rlse;
    test::cross_entropy_ref(test::to_double(d.logits), d.ignoring, kRows, d.V, d.Vp, rl, rlse);
    EXPECT_LT(test::rel_err(l_ign, rl), test::kTolF32) << at;

    Buf g_real(dt, d.logits.size()), g_ign(dt, std::vector<float>(d.logits.size(), 5.0f));
    be->cross_entropy_backward(dt, g_real.data(), logits.data(), lse_real.data(), d.real.data(),
                               kScale, kRows, d.V, d.Vp);
    be->cross_entropy_backward(dt, g_ign.data(), logits.data(), lse_ign.data(), d.ignoring.data(),
                               kScale, kRows, d.V, d.Vp);
    const auto ign = g_ign.get();
    expect_rows(ign, g_real.get(), d.Vp, at);
    // In place (dlogits aliasing logits), as the engine runs it: the same bits.
    be->cross_entropy_backward(dt, logits.data(), logits.data(), lse_ign.data(), d.ignoring.data(),
                               kScale, kRows, d.V, d.Vp);
    EXPECT_EQ(logits.get(), ign) << at << " in place";
  }
}

TEST(CrossEntropyIgnored, EveryRowIgnoredGivesZeroLossesAndGradients) {
  const IgnoredRows d(50, 64, DType::f32);
  const std::vector<int32_t> none(kRows, -1);
  auto be = make_cpu_backend();
  std::vector<float> losses(kRows, 9.0f), lse(kRows), grad(d.logits.size(), 5.0f);
  be->cross_entropy_forward(DType::f32, losses.data(), lse.data(), d.logits.data(), none.data(),
                            kRows, d.V, d.Vp);
  be->cross_entropy_backward(DType::f32, grad.data(), d.logits.data(), lse.data(), none.data(),
                             kScale, kRows, d.V, d.Vp);
  EXPECT_EQ(losses, std::vector<float>(kRows, 0.0f));
  EXPECT_EQ(grad, std::vector<float>(d.logits.size(), 0.0f));
  // A target at or past V is still refused, whatever else is ignored.
  std::vector<int32_t> bad = none;
  bad[6] = 50;
  try {
    be->cross_entropy_forward(DType::f32, losses.data(), lse.data(), d.logits.data(), bad.data(),
                              kRows, d.V, d.Vp);
    FAIL() << "target 50 accepted with V = 50";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("targets[6] = 50"), std::string::npos) << e.what();
  }
}

// V real ids of Vp, split evenly; {30, 64, 4} leaves two shards without real
// columns, {5003, 5056, 2} crosses the 2048-column chunks.
struct IgnoredSplit {
  int V, Vp, shards;
  int rows() const { return Vp / shards; }
  int begin(int s) const { return s * rows(); }
  int real(int s) const { return std::clamp(V - begin(s), 0, rows()); }
  std::string str() const {
    return "V = " + std::to_string(V) + " of " + std::to_string(Vp) + " in " +
           std::to_string(shards) + " shards";
  }
};
constexpr IgnoredSplit kIgnoredSplits[] = {{50, 64, 2}, {30, 64, 4}, {5003, 5056, 2}};

// Shard s's [kRows, rows] columns of the whole logits.
std::vector<float> shard_columns(const IgnoredRows& d, const IgnoredSplit& sp, int s) {
  std::vector<float> m(size_t(kRows) * sp.rows());
  for (int i = 0; i < kRows; ++i)
    std::copy_n(d.logits.begin() + std::ptrdiff_t(size_t(i) * sp.Vp + sp.begin(s)), sp.rows(),
                m.begin() + std::ptrdiff_t(size_t(i) * sp.rows()));
  return m;
}

// Every shard's statistics [shards][2N] for these targets, and their combination.
struct Combined {
  std::vector<float> gathered, losses, lse;
};

Combined combined(Backend& be, DType dt, const IgnoredRows& d, const IgnoredSplit& sp,
                  const std::vector<int32_t>& targets) {
  Combined c{std::vector<float>(size_t(sp.shards) * 2 * kRows, 123.0f),
             std::vector<float>(kRows, 9.0f), std::vector<float>(kRows)};
  for (int s = 0; s < sp.shards; ++s) {
    Buf logits(dt, shard_columns(d, sp, s));
    be.cross_entropy_shard_forward(dt, c.gathered.data() + size_t(s) * 2 * kRows, logits.data(),
                                   targets.data(), kRows, sp.begin(s), sp.real(s), sp.rows());
  }
  be.cross_entropy_combine_shards(c.losses.data(), c.lse.data(), c.gathered.data(), targets.data(),
                                  sp.shards, kRows);
  return c;
}

// Shard statistics: an ignored row's target logit is 0 on every shard, its
// logsumexp unchanged; combined: loss 0, logsumexp unchanged, other rows' bits
// unchanged; shard backward: the ignored rows 0, the others' bits unchanged.
TEST(CrossEntropyIgnored, ShardStatisticsCombineAndBackward) {
  auto be = make_cpu_backend();
  for (DType dt : {DType::f32, DType::bf16})
    for (const IgnoredSplit& sp : kIgnoredSplits) {
      const IgnoredRows d(sp.V, sp.Vp, dt);
      const std::string at = std::string(dtype_name(dt)) + " " + sp.str();
      const Combined real = combined(*be, dt, d, sp, d.real);
      const Combined ign = combined(*be, dt, d, sp, d.ignoring);
      for (int s = 0; s < sp.shards; ++s)
        for (int i = 0; i < kRows; ++i) {
          const size_t lse_at = size_t(s) * 2 * kRows + i, target_at = lse_at + kRows;
          EXPECT_EQ(ign.gathered[lse_at], real.gathered[lse_at]) << at << " shard " << s;
          EXPECT_EQ(ign.gathered[target_at], ignored_row(i) ? 0.0f : real.gathered[target_at])
              << at << " shard " << s << " row " << i;
        }
      EXPECT_EQ(ign.lse, real.lse) << at;
      for (int i = 0; i < kRows; ++i)
        EXPECT_EQ(ign.losses[i], ignored_row(i) ? 0.0f : real.losses[i]) << at << " row " << i;
      Vec rl, rlse;
      test::cross_entropy_ref(test::to_double(d.logits), d.ignoring, kRows, sp.V, sp.Vp, rl, rlse);
      EXPECT_LT(test::rel_err(ign.losses, rl), test::kTolF32) << at;
      for (int s = 0; s < sp.shards; ++s) {
        Buf x(dt, shard_columns(d, sp, s)), g_real(dt, size_t(kRows) * sp.rows());
        Buf g_ign(dt, std::vector<float>(size_t(kRows) * sp.rows(), 5.0f));
        be->cross_entropy_shard_backward(dt, g_real.data(), x.data(), real.lse.data(),
                                         d.real.data(), kScale, kRows, sp.begin(s), sp.real(s),
                                         sp.rows());
        be->cross_entropy_shard_backward(dt, g_ign.data(), x.data(), ign.lse.data(),
                                         d.ignoring.data(), kScale, kRows, sp.begin(s), sp.real(s),
                                         sp.rows());
        expect_rows(g_ign.get(), g_real.get(), sp.rows(), at + " shard " + std::to_string(s));
      }
    }
}

}  // namespace
}  // namespace hybrid::kernels
