// Vocabulary-sharded embedding and cross-entropy (tensor parallelism) on the CPU
// backend: a random vocabulary split into 2 and 4 shards (one split leaves shards
// without real columns) must reproduce the whole-vocabulary ops, which the
// neighbouring suites check against the naive double reference; the combined
// cross-entropy is also checked against that reference directly.
//
// Tolerances: the embedding only moves values (and adds zeros), so fp32 is exact;
// bf16 forward rounds wte + wpe once per shard instead of once (≤ 2 ulp of 2^-8).
// Cross-entropy statistics are fp32 whatever dt: losses and lse within 1e-5
// relative; gradients within 1e-6 absolute in fp32 (the combined lse differs from
// the whole row's in the last bits), one bf16 ulp (2^-8 · dloss) in bf16.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "reference.h"

namespace hybrid::kernels {
namespace {

using test::Buf;
using test::Vec;

constexpr float kInf = std::numeric_limits<float>::infinity();

// V real ids of a Vp-row (padded) vocabulary, split evenly over `shards` ranks.
struct Split {
  int V, Vp, shards;
  int rows() const { return Vp / shards; }
  int begin(int s) const { return s * rows(); }
  int real(int s) const { return std::clamp(V - begin(s), 0, rows()); }  // may be 0
};

std::string describe(const Split& sp, DType dt) {
  return std::string(dtype_name(dt)) + " V = " + std::to_string(sp.V) + " of " +
         std::to_string(sp.Vp) + " in " + std::to_string(sp.shards) + " shards";
}

// {30, 64, 4}: shards 2 and 3 hold only padding (V == 0 real columns).
constexpr Split kSplits[] = {{50, 64, 2}, {50, 64, 4}, {30, 64, 4}};
constexpr DType kDtypes[] = {DType::f32, DType::bf16};

// The element at `offset` of a dt buffer (a shard's first row of wte).
void* at(Buf& b, DType dt, size_t offset) {
  return static_cast<char*>(b.data()) + offset * dtype_size(dt);
}

// ---- embedding -------------------------------------------------------------------

constexpr int B = 3, T = 10, C = 72;

struct Embedding {
  std::vector<int32_t> tokens;
  std::vector<float> wte, wpe, dout;
  Embedding(const Split& sp, DType dt)
      : tokens(test::random_ints(size_t(B) * T, sp.V, 81)),
        wte(test::round_to(dt, test::random_floats(size_t(sp.Vp) * C, 82))),
        wpe(test::round_to(dt, test::random_floats(size_t(T) * C, 83))),
        dout(test::round_to(dt, test::random_floats(size_t(B) * T * C, 84))) {}
};

TEST(VocabShard, EncoderForwardSummedOverShardsIsTheWholeVocabulary) {
  auto be = make_cpu_backend();
  const size_t n = size_t(B) * T * C;
  for (DType dt : kDtypes)
    for (const Split& sp : kSplits) {
      const Embedding d(sp, dt);
      Buf wte(dt, d.wte), wpe(dt, d.wpe), whole(dt, n);
      be->encoder_forward(dt, whole.data(), d.tokens.data(), nullptr, wte.data(), wpe.data(), B, T,
                          C);
      std::vector<float> sum(n, 0.0f);
      for (int s = 0; s < sp.shards; ++s) {
        Buf out(dt, std::vector<float>(n, 7.0f));  // overwritten everywhere
        be->encoder_shard_forward(dt, out.data(), d.tokens.data(), nullptr,
                                  at(wte, dt, size_t(sp.begin(s)) * C),
                                  s == 0 ? wpe.data() : nullptr, B, T, C, sp.begin(s), sp.rows());
        const auto o = out.get();
        for (size_t i = 0; i < n; ++i) sum[i] += o[i];
        // Without wpe, a token another shard holds gives an exact zero row.
        for (int bt = 0; s > 0 && bt < B * T; ++bt) {
          if (d.tokens[bt] >= sp.begin(s) && d.tokens[bt] < sp.begin(s) + sp.rows()) continue;
          for (int c = 0; c < C; ++c)
            ASSERT_EQ(o[size_t(bt) * C + c], 0.0f) << describe(sp, dt) << " shard " << s;
        }
      }
      if (dt == DType::f32)
        EXPECT_EQ(sum, whole.get()) << describe(sp, dt);
      else
        EXPECT_LT(test::rel_err(sum, whole.get()), 1e-2) << describe(sp, dt);
    }
}

TEST(VocabShard, EncoderBackwardShardsConcatenateToTheWholeGradient) {
  auto be = make_cpu_backend();
  for (DType dt : kDtypes)
    for (const Split& sp : kSplits) {
      const Embedding d(sp, dt);
      // Non-zero starting gradients: the ops accumulate.
      const auto dwte0 = test::round_to(dt, test::random_floats(size_t(sp.Vp) * C, 85));
      const auto dwpe0 = test::round_to(dt, test::random_floats(size_t(T) * C, 86));
      Buf dout(dt, d.dout), wdwte(dt, dwte0), wdwpe(dt, dwpe0);
      be->encoder_backward(dt, wdwte.data(), wdwpe.data(), dout.data(), d.tokens.data(), nullptr, B,
                           T, C);
      // Each shard writes its rows of one whole-vocabulary buffer: a write outside
      // its rows would land in another shard's and show up as a difference.
      Buf sdwte(dt, dwte0), sdwpe(dt, dwpe0);
      for (int s = 0; s < sp.shards; ++s)
        be->encoder_shard_backward(dt, at(sdwte, dt, size_t(sp.begin(s)) * C),
                                   s == 0 ? sdwpe.data() : nullptr, dout.data(), d.tokens.data(),
                                   nullptr, B, T, C, sp.begin(s), sp.rows());
      EXPECT_EQ(sdwte.get(), wdwte.get()) << describe(sp, dt);
      EXPECT_EQ(sdwpe.get(), wdwpe.get()) << describe(sp, dt);
    }
}

// ---- cross-entropy ---------------------------------------------------------------

constexpr int N = 7;
constexpr float kDloss = 0.25f;

// Adds a split whose shards cross the CPU kernel's 2048-column chunks.
constexpr Split kCeSplits[] = {{50, 64, 2}, {50, 64, 4}, {30, 64, 4}, {5003, 5056, 2}};

struct Logits {
  std::vector<float> whole;  // [N, Vp], garbage in the padding
  std::vector<int32_t> targets;
  Logits(const Split& sp, DType dt)
      : whole(test::round_to(dt, test::random_floats(size_t(N) * sp.Vp, 91, -8.0f, 8.0f))),
        targets(test::random_ints(N, sp.V, 92)) {
    for (int i = 0; i < N; ++i)
      for (int j = sp.V; j < sp.Vp; ++j) whole[size_t(i) * sp.Vp + j] = 1e30f;
  }
  // Shard s's own [N, rows] logits: columns [begin, begin + rows) of the whole.
  std::vector<float> shard(const Split& sp, int s) const {
    std::vector<float> m(size_t(N) * sp.rows());
    for (int i = 0; i < N; ++i)
      std::copy_n(whole.begin() + size_t(i) * sp.Vp + sp.begin(s), sp.rows(),
                  m.begin() + size_t(i) * sp.rows());
    return m;
  }
};

// Every shard's statistics, [shards][2N], then combined into losses and lse.
void sharded_forward(Backend& be, DType dt, const Split& sp, const Logits& d,
                     std::vector<float>& losses, std::vector<float>& lse,
                     std::vector<float>& gathered) {
  gathered.assign(size_t(sp.shards) * 2 * N, 123.0f);  // overwritten
  for (int s = 0; s < sp.shards; ++s) {
    Buf logits(dt, d.shard(sp, s));
    be.cross_entropy_shard_forward(dt, gathered.data() + size_t(s) * 2 * N, logits.data(),
                                   d.targets.data(), N, sp.begin(s), sp.real(s), sp.rows());
  }
  losses.assign(N, 0.0f);
  lse.assign(N, 0.0f);
  be.cross_entropy_combine_shards(losses.data(), lse.data(), gathered.data(), d.targets.data(),
                                  sp.shards, N);
}

TEST(VocabShard, CrossEntropyCombinedShardsMatchTheWholeRowAndTheNaiveReference) {
  auto be = make_cpu_backend();
  for (DType dt : kDtypes)
    for (const Split& sp : kCeSplits) {
      const Logits d(sp, dt);
      Buf logits(dt, d.whole);
      std::vector<float> wl(N), wlse(N), losses, lse, gathered;
      be->cross_entropy_forward(dt, wl.data(), wlse.data(), logits.data(), d.targets.data(), N,
                                sp.V, sp.Vp);
      sharded_forward(*be, dt, sp, d, losses, lse, gathered);
      EXPECT_LT(test::rel_err(losses, wl), 1e-5) << describe(sp, dt);
      EXPECT_LT(test::rel_err(lse, wlse), 1e-5) << describe(sp, dt);
      Vec rl, rlse;
      test::cross_entropy_ref(test::to_double(d.whole), d.targets, N, sp.V, sp.Vp, rl, rlse);
      EXPECT_LT(test::rel_err(losses, rl), 1e-5) << describe(sp, dt);
      EXPECT_LT(test::rel_err(lse, rlse), 1e-5) << describe(sp, dt);
      // Exactly one shard holds each target; the others report 0.
      for (int i = 0; i < N; ++i)
        for (int s = 0; s < sp.shards; ++s) {
          const float got = gathered[size_t(s) * 2 * N + N + i];
          const int local = d.targets[i] - sp.begin(s);
          const bool holds = local >= 0 && local < sp.real(s);
          EXPECT_EQ(got, holds ? d.whole[size_t(i) * sp.Vp + d.targets[i]] : 0.0f)
              << describe(sp, dt) << " row " << i << " shard " << s;
        }
    }
}

TEST(VocabShard, CrossEntropyShardWithoutRealColumnsReportsMinusInfinityAndCombinesFinite) {
  auto be = make_cpu_backend();
  const Split sp{30, 64, 4};
  ASSERT_EQ(sp.real(2), 0);
  ASSERT_EQ(sp.real(3), 0);
  const Logits d(sp, DType::f32);
  std::vector<float> losses, lse, gathered;
  sharded_forward(*be, DType::f32, sp, d, losses, lse, gathered);
  for (int s : {2, 3})
    for (int i = 0; i < N; ++i) {
      EXPECT_EQ(gathered[size_t(s) * 2 * N + i], -kInf) << "lse, shard " << s << " row " << i;
      EXPECT_EQ(gathered[size_t(s) * 2 * N + N + i], 0.0f) << "target, shard " << s;
    }
  Vec rl, rlse;
  test::cross_entropy_ref(test::to_double(d.whole), d.targets, N, sp.V, sp.Vp, rl, rlse);
  for (int i = 0; i < N; ++i) {
    ASSERT_TRUE(std::isfinite(losses[i]) && std::isfinite(lse[i])) << "row " << i;
    EXPECT_NEAR(lse[i], rlse[i], 1e-5 * std::abs(rlse[i])) << "row " << i;
    EXPECT_NEAR(losses[i], rl[i], 1e-5 * std::abs(rlse[i])) << "row " << i;
  }
  // A lone shard without real columns: logsumexp of nothing.
  std::vector<float> alone(2 * N, 0.0f);
  for (int i = 0; i < N; ++i) alone[i] = -kInf;
  be->cross_entropy_combine_shards(losses.data(), lse.data(), alone.data(), d.targets.data(), 1, N);
  EXPECT_EQ(lse[0], -kInf);
}

TEST(VocabShard, CrossEntropyShardBackwardMatchesTheWholeRowInPlaceTooAndZeroesPadding) {
  auto be = make_cpu_backend();
  for (DType dt : kDtypes)
    for (const Split& sp : kCeSplits) {
      const Logits d(sp, dt);
      Buf logits(dt, d.whole), wgrad(dt, d.whole.size());
      std::vector<float> wl(N), wlse(N), losses, lse, gathered;
      be->cross_entropy_forward(dt, wl.data(), wlse.data(), logits.data(), d.targets.data(), N,
                                sp.V, sp.Vp);
      be->cross_entropy_backward(dt, wgrad.data(), logits.data(), wlse.data(), d.targets.data(),
                                 kDloss, N, sp.V, sp.Vp);
      const auto whole = wgrad.get();
      sharded_forward(*be, dt, sp, d, losses, lse, gathered);
      double worst = 0.0;
      for (int s = 0; s < sp.shards; ++s) {
        const auto own = d.shard(sp, s);
        Buf x(dt, own), g(dt, std::vector<float>(own.size(), 5.0f));  // g is overwritten
        be->cross_entropy_shard_backward(dt, g.data(), x.data(), lse.data(), d.targets.data(),
                                         kDloss, N, sp.begin(s), sp.real(s), sp.rows());
        const auto got = g.get();
        for (int i = 0; i < N; ++i)
          for (int j = 0; j < sp.rows(); ++j) {
            const float v = got[size_t(i) * sp.rows() + j];
            if (j >= sp.real(s))
              ASSERT_EQ(v, 0.0f) << describe(sp, dt) << " padding " << i << "," << j;
            else
              worst =
                  std::max(worst, std::abs(double(v) - whole[size_t(i) * sp.Vp + sp.begin(s) + j]));
          }
        // In place on the shard's logits: the same bits.
        be->cross_entropy_shard_backward(dt, x.data(), x.data(), lse.data(), d.targets.data(),
                                         kDloss, N, sp.begin(s), sp.real(s), sp.rows());
        EXPECT_EQ(x.get(), got) << describe(sp, dt) << " shard " << s;
      }
      EXPECT_LE(worst, dt == DType::f32 ? 1e-6 : kDloss / 256.0) << describe(sp, dt);
    }
}

TEST(VocabShard, RejectsInconsistentShardSizesNamingThem) {
  auto be = make_cpu_backend();
  std::vector<float> logits(2 * 16), stats(4);
  std::vector<int32_t> targets = {0, 1};
  try {
    be->cross_entropy_shard_forward(DType::f32, stats.data(), logits.data(), targets.data(), 2, 0,
                                    17, 16);
    FAIL() << "V = 17 real columns accepted in a shard of 16";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("V = 17, Vs = 16"), std::string::npos) << e.what();
  }
  std::vector<float> out(C, 0.0f), wte(C, 0.0f);
  try {
    be->encoder_shard_forward(DType::f32, out.data(), targets.data(), nullptr, wte.data(), nullptr,
                              1, 1, C, -4, 1);
    FAIL() << "begin = -4 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("begin = -4"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hybrid::kernels
