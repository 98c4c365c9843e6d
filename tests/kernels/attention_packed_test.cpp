// Attention over packed documents (positions given: query t of a row sees keys
// t − positions[t] .. t only) on the CPU backend, multi-head and grouped-query:
// - against the naive double reference with the same mask (out, the saved
//   logsumexps, dqkv added into a non-zero start), fp32 within 1e-5;
// - the naive backward checked against central differences of the naive forward;
// - each document of a packed row against that document run alone (B = 1,
//   T = its length, no positions): the packing changes nothing but rounding;
// - a row that is one document (positions[t] = t) against positions == null:
//   identical bits;
// - bf16 / f16 storage against fp32 on the same rounded inputs (1e-2 / 2e-3, as
//   attention_test.cpp);
// - the skipped key tiles are not read (NaNs there reach nothing);
// - a position outside 0..t refused, naming the row and the token.
// T = 200 spans three full 64-wide tiles and a partial one; the packings put
// document starts inside tiles, on tile boundaries and single-token documents,
// documents crossing every tile boundary, and a random packing.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "reference.h"

namespace hybrid::kernels {
namespace {

using test::Buf;
using test::Vec;

struct PackedShape {
  int B, T, NH, NKV, hs;
  int C() const { return NH * hs; }
  size_t ld() const { return size_t(C()) + 2 * size_t(NKV) * hs; }
  size_t qkv() const { return size_t(B) * T * ld(); }
  size_t out() const { return size_t(B) * T * C(); }
  std::string str() const {
    return "B " + std::to_string(B) + " T " + std::to_string(T) + " NH " + std::to_string(NH) +
           " NKV " + std::to_string(NKV) + " hs " + std::to_string(hs);
  }
};

struct PackedResult {
  std::vector<float> out, saved, dqkv;
};

// Forward, then backward added into dqkv0; positions may be null.
PackedResult run_packed(DType dt, const PackedShape& s, const int32_t* positions,
                        const std::vector<float>& qkv, const std::vector<float>& dout,
                        const std::vector<float>& dqkv0) {
  auto be = make_cpu_backend();
  Buf bqkv(dt, qkv), bout(dt, s.out()), bdout(dt, dout), bdqkv(dt, dqkv0);
  std::vector<float> saved(be->attention_saved_bytes(dt, s.B, s.T, s.C(), s.NH) / sizeof(float));
  be->attention_forward(dt, bout.data(), saved.data(), bqkv.data(), positions, s.B, s.T, s.C(),
                        s.NH, s.NKV);
  be->attention_backward(dt, bdqkv.data(), bdout.data(), bqkv.data(), bout.data(), saved.data(),
                         positions, s.B, s.T, s.C(), s.NH, s.NKV);
  return {bout.get(), saved, bdqkv.get()};
}

// Each token's position in its document, for documents of the given lengths
// laid end to end.
std::vector<int32_t> positions_of(const std::vector<int>& lengths) {
  std::vector<int32_t> pos;
  for (int len : lengths)
    for (int i = 0; i < len; ++i) pos.push_back(i);
  return pos;
}

// Random document lengths in 1..longest filling T exactly.
std::vector<int> random_lengths(int T, int longest, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> len(1, longest);
  std::vector<int> out;
  for (int left = T; left > 0;) {
    out.push_back(std::min(left, len(gen)));
    left -= out.back();
  }
  return out;
}

// Rows of T = 200 (tiles [0, 64), [64, 128), [128, 192), [192, 200)):
// row 0: starts inside a tile (1, 41, 66, 130), on tile boundaries (64, 128),
//        single-token documents (at 0, 64, 65);
// row 1: documents crossing each boundary (51..110, 111..155, 156..199);
// row 2: random lengths 1..80.
std::vector<std::vector<int>> packings(int T, uint32_t seed) {
  return {{1, 40, 23, 1, 1, 62, 2, 70}, {50, 1, 60, 45, 44}, random_lengths(T, 80, seed)};
}

std::vector<int32_t> packed_positions(const PackedShape& s, uint32_t seed) {
  std::vector<int32_t> pos;
  const auto rows = packings(s.T, seed);
  for (int b = 0; b < s.B; ++b) {
    const auto p = positions_of(rows[size_t(b) % rows.size()]);
    EXPECT_EQ(int(p.size()), s.T);
    pos.insert(pos.end(), p.begin(), p.end());
  }
  return pos;
}

// MHA, GQA (2 key/value heads of 4) and multi-query (1 of 6).
constexpr PackedShape kPackedShapes[] = {{3, 200, 4, 4, 8}, {3, 200, 4, 2, 12}, {3, 200, 6, 1, 5}};

TEST(PackedAttention, ForwardBackwardMatchTheNaiveMaskedReference) {
  uint32_t seed = 300;
  for (const PackedShape& s : kPackedShapes) {
    const auto pos = packed_positions(s, seed);
    const auto qkv = test::random_floats(s.qkv(), seed + 1, -2.0f, 2.0f);
    const auto dout = test::random_floats(s.out(), seed + 2);
    const auto dqkv0 = test::random_floats(s.qkv(), seed + 3);  // backward adds (+=) into it
    seed += 10;
    const PackedResult r = run_packed(DType::f32, s, pos.data(), qkv, dout, dqkv0);
    const test::MaskedAttention a{s.B, s.T, s.NH, s.NKV, s.hs, pos};
    Vec lse;
    const Vec out = test::masked_attention_fwd_ref(a, test::to_double(qkv), &lse);
    Vec dqkv = test::to_double(dqkv0);
    test::masked_attention_bwd_ref(a, dqkv, test::to_double(dout), test::to_double(qkv));
    const double e_out = test::rel_err(r.out, out), e_lse = test::rel_err(r.saved, lse),
                 e_d = test::rel_err(r.dqkv, dqkv);
    std::printf("packed attention %s vs naive: out %.2e, lse %.2e, dqkv %.2e\n", s.str().c_str(),
                e_out, e_lse, e_d);
    EXPECT_LT(e_out, test::kTolF32) << s.str();
    EXPECT_LT(e_lse, test::kTolF32) << s.str() << ": saved = logsumexp of each masked row";
    EXPECT_LT(e_d, test::kTolF32) << s.str();
  }
}

// The reference's backward is itself checked: central differences of the
// masked forward, L = Σ out ⊙ R, on a small grouped shape with two documents
// and single-token ones.
TEST(PackedAttention, BackwardMatchesFiniteDifferencesOfTheMaskedForward) {
  const PackedShape s{2, 9, 2, 1, 3};
  const std::vector<int32_t> pos = {0, 1, 2, 0, 0, 1, 2, 3, 0, /* row 1 */ 0,
                                    0, 1, 0, 1, 2, 3, 4, 5};
  const auto qkv = test::random_floats(s.qkv(), 320, -2.0f, 2.0f);
  const auto dout = test::random_floats(s.out(), 321);
  const PackedResult r =
      run_packed(DType::f32, s, pos.data(), qkv, dout, std::vector<float>(s.qkv(), 0.0f));
  const test::MaskedAttention a{s.B, s.T, s.NH, s.NKV, s.hs, pos};
  Vec x = test::to_double(qkv);
  const Vec R = test::to_double(dout);
  auto loss = [&] { return test::dot(test::masked_attention_fwd_ref(a, x), R); };
  const Vec fd = test::finite_diff(x, loss);
  Vec ref(s.qkv(), 0.0);
  test::masked_attention_bwd_ref(a, ref, R, test::to_double(qkv));
  const double e_kernel = test::rel_err(r.dqkv, fd), e_ref = test::rel_err(ref, fd);
  std::printf("packed attention backward vs finite differences: kernel %.2e, reference %.2e\n",
              e_kernel, e_ref);
  EXPECT_LT(e_kernel, test::kTolFd);
  EXPECT_LT(e_ref, test::kTolFd);
}

// The rows [first, first + len) of a [B·T, width] tensor's row b.
std::vector<float> rows_of(const std::vector<float>& m, size_t width, int b, int T, int first,
                           int len) {
  const auto begin = m.begin() + std::ptrdiff_t((size_t(b) * T + first) * width);
  return {begin, begin + std::ptrdiff_t(size_t(len) * width)};
}

// The packing's only effect is rounding: every document of every packed row
// gives the out, logsumexps and dqkv of the same document run on its own.
// Tolerance 1e-6 per document and tensor (max error over the document's max):
// the tiles fall differently, so the online softmax rescales and the SIMD sums
// group differently; fp32 rounding, not bits.
TEST(PackedAttention, EachDocumentOfAPackedRowEqualsThatDocumentAlone) {
  uint32_t seed = 340;
  for (const PackedShape& s : kPackedShapes) {
    const auto rows = packings(s.T, seed);
    const auto pos = packed_positions(s, seed);
    const auto qkv = test::random_floats(s.qkv(), seed + 1, -2.0f, 2.0f);
    const auto dout = test::random_floats(s.out(), seed + 2);
    seed += 10;
    const PackedResult packed =
        run_packed(DType::f32, s, pos.data(), qkv, dout, std::vector<float>(s.qkv(), 0.0f));
    double worst = 0.0;
    int docs = 0, bitwise = 0;
    for (int b = 0; b < s.B; ++b) {
      int first = 0;
      for (int len : rows[size_t(b) % rows.size()]) {
        const PackedShape one{1, len, s.NH, s.NKV, s.hs};
        const PackedResult alone = run_packed(
            DType::f32, one, nullptr, rows_of(qkv, s.ld(), b, s.T, first, len),
            rows_of(dout, size_t(s.C()), b, s.T, first, len), std::vector<float>(one.qkv(), 0.0f));
        std::vector<float> lse;  // the packed row's [NH, T] logsumexps of this document
        for (int h = 0; h < s.NH; ++h)
          for (int i = 0; i < len; ++i)
            lse.push_back(packed.saved[(size_t(b) * s.NH + h) * s.T + first + i]);
        const auto out = rows_of(packed.out, size_t(s.C()), b, s.T, first, len);
        const auto dqkv = rows_of(packed.dqkv, s.ld(), b, s.T, first, len);
        const std::string at = s.str() + ", row " + std::to_string(b) + ", document at " +
                               std::to_string(first) + " of " + std::to_string(len);
        auto check = [&](const std::vector<float>& got, const std::vector<float>& want,
                         const char* what) {
          const double e = test::rel_err(got, want);
          worst = std::max(worst, e);
          bitwise += got == want;
          EXPECT_LT(e, 1e-6) << at << ": " << what;
        };
        check(out, alone.out, "out");
        check(lse, alone.saved, "lse");
        check(dqkv, alone.dqkv, "dqkv");
        ++docs;
        first += len;
      }
    }
    std::printf(
        "packed attention %s: %d documents, each vs alone: worst %.2e, %d of %d tensors "
        "bitwise\n",
        s.str().c_str(), docs, worst, bitwise, 3 * docs);
  }
}

// positions[t] = t is the whole row as one document: the kernel takes the same
// path as without positions (first key 0 everywhere), so the bits are equal.
TEST(PackedAttention, OneDocumentPerRowGivesTheBitsOfNoPositions) {
  for (DType dt : {DType::f32, DType::bf16})
    for (const PackedShape& s : kPackedShapes) {
      std::vector<int32_t> pos;
      for (int b = 0; b < s.B; ++b)
        for (int t = 0; t < s.T; ++t) pos.push_back(t);
      const auto qkv = test::round_to(dt, test::random_floats(s.qkv(), 360, -2.0f, 2.0f));
      const auto dout = test::round_to(dt, test::random_floats(s.out(), 361));
      const auto dqkv0 = test::round_to(dt, test::random_floats(s.qkv(), 362));
      const PackedResult with = run_packed(dt, s, pos.data(), qkv, dout, dqkv0);
      const PackedResult without = run_packed(dt, s, nullptr, qkv, dout, dqkv0);
      const std::string at = s.str() + " " + std::string(dtype_name(dt));
      EXPECT_EQ(with.out, without.out) << at;
      EXPECT_EQ(with.saved, without.saved) << at;
      EXPECT_EQ(with.dqkv, without.dqkv) << at;
    }
}

TEST(PackedAttention, LowPrecisionMatchesFp32) {
  const PackedShape s = kPackedShapes[1];
  const auto pos = packed_positions(s, 370);
  for (DType dt : {DType::bf16, DType::f16}) {
    const auto qkv = test::round_to(dt, test::random_floats(s.qkv(), 371));
    const auto dout = test::round_to(dt, test::random_floats(s.out(), 372));
    const std::vector<float> zeros(s.qkv(), 0.0f);
    const double tol = dt == DType::bf16 ? 1e-2 : 2e-3;
    const PackedResult r32 = run_packed(DType::f32, s, pos.data(), qkv, dout, zeros);
    const PackedResult r = run_packed(dt, s, pos.data(), qkv, dout, zeros);
    const double e_out = test::rel_err(r.out, r32.out), e_d = test::rel_err(r.dqkv, r32.dqkv);
    std::printf("packed attention %s vs fp32: out %.2e, dqkv %.2e\n",
                std::string(dtype_name(dt)).c_str(), e_out, e_d);
    EXPECT_LT(e_out, tol) << dtype_name(dt);
    EXPECT_LT(test::rel_err(r.saved, r32.saved), tol) << dtype_name(dt);
    EXPECT_LT(e_d, tol) << dtype_name(dt);
  }
}

// The skipping itself, without a clock: rows of two 128-token documents whose
// first 64 tokens (key tile 0, q, k and v) are NaN. The second document's query
// blocks start at key tile 2, so they never read tile 0: their out, logsumexps
// and every dqkv row of theirs keep the bits of a run without the NaNs (a tile
// that was read, even masked, would spread them: 0 · NaN in P·v).
TEST(PackedAttention, KeyTilesBeforeAQueryBlocksDocumentAreNotRead) {
  const PackedShape s{1, 256, 4, 2, 8};
  const auto pos = positions_of({128, 128});
  const auto qkv = test::random_floats(s.qkv(), 380, -2.0f, 2.0f);
  const auto dout = test::random_floats(s.out(), 381);
  auto poisoned = qkv;
  std::fill(poisoned.begin(), poisoned.begin() + std::ptrdiff_t(64 * s.ld()), std::nanf(""));
  const std::vector<float> zeros(s.qkv(), 0.0f);
  const PackedResult clean = run_packed(DType::f32, s, pos.data(), qkv, dout, zeros);
  const PackedResult r = run_packed(DType::f32, s, pos.data(), poisoned, dout, zeros);
  EXPECT_EQ(rows_of(r.out, size_t(s.C()), 0, s.T, 128, 128),
            rows_of(clean.out, size_t(s.C()), 0, s.T, 128, 128));
  EXPECT_EQ(rows_of(r.dqkv, s.ld(), 0, s.T, 128, 128),
            rows_of(clean.dqkv, s.ld(), 0, s.T, 128, 128));
  for (int h = 0; h < s.NH; ++h)
    for (int t = 128; t < s.T; ++t)
      ASSERT_EQ(r.saved[size_t(h) * s.T + t], clean.saved[size_t(h) * s.T + t])
          << "head " << h << ", token " << t;
  EXPECT_TRUE(std::isnan(r.out[0])) << "the poisoned document itself does see its NaNs";
}

// A position past its token's index (a document starting before the row) or
// negative: refused by forward and backward, naming the row, the token and the value.
TEST(PackedAttention, PositionOutsideZeroToTokenIndexIsRefusedNamingIt) {
  const PackedShape s{2, 8, 2, 2, 4};
  auto be = make_cpu_backend();
  std::vector<float> qkv(s.qkv(), 0.5f), out(s.out()), dout(s.out(), 1.0f), dqkv(s.qkv());
  std::vector<float> saved(be->attention_saved_bytes(DType::f32, s.B, s.T, s.C(), s.NH) / 4);
  struct Bad {
    int b, t, value;
    std::string named;
  };
  for (const Bad& bad : {Bad{1, 5, 6, "positions[1, 5] = 6 is outside 0..5"},
                         Bad{0, 3, -1, "positions[0, 3] = -1 is outside 0..3"},
                         Bad{0, 0, 1, "positions[0, 0] = 1 is outside 0..0"}}) {
    std::vector<int32_t> pos;
    for (int b = 0; b < s.B; ++b)
      for (int t = 0; t < s.T; ++t) pos.push_back(t % 4);
    pos[size_t(bad.b) * s.T + bad.t] = bad.value;
    try {
      be->attention_forward(DType::f32, out.data(), saved.data(), qkv.data(), pos.data(), s.B, s.T,
                            s.C(), s.NH, s.NKV);
      ADD_FAILURE() << "forward accepted " << bad.named;
    } catch (const std::out_of_range& e) {
      EXPECT_NE(std::string(e.what()).find("attention_forward: " + bad.named), std::string::npos)
          << e.what();
    }
    const std::vector<float> before = dqkv;
    try {
      be->attention_backward(DType::f32, dqkv.data(), dout.data(), qkv.data(), out.data(),
                             saved.data(), pos.data(), s.B, s.T, s.C(), s.NH, s.NKV);
      ADD_FAILURE() << "backward accepted " << bad.named;
    } catch (const std::out_of_range& e) {
      EXPECT_NE(std::string(e.what()).find("attention_backward: " + bad.named), std::string::npos)
          << e.what();
    }
    EXPECT_EQ(dqkv, before) << "nothing half-written";
  }
}

}  // namespace
}  // namespace hybrid::kernels
