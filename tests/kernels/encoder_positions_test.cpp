// encoder_forward/backward and the vocabulary-shard variants with positions
// (token (b, t) takes wpe row positions[b·T + t]: packed documents, generation)
// against the naive reference (reference.h), on rows that repeat positions:
// row 0 three packed documents, row 1 one document at an offset (positions
// t + 20, as in generation), row 2 forty single-token documents (position 0
// forty times). C = 136: two full 64-channel blocks of the CPU scatter and a
// partial one. Tolerances: fp32 1e-6 (forward is one add; backward sums at most
// 43 rows per position, as encoder_test.cpp); bf16 / f16 against fp32 on the
// same rounded inputs 1e-2 / 2e-3.
#include <gtest/gtest.h>

#include "reference.h"

namespace hybrid::kernels {
namespace {

using test::Buf;
using test::Vec;

// Tokens, positions and tables of the suite; wpe has more rows than T.
struct PositionedTokens {
  static constexpr int B = 3, T = 40, C = 136, V = 7, P = 64;
  std::vector<int32_t> tokens = test::random_ints(size_t(B) * T, V, 401);
  std::vector<int32_t> positions;
  std::vector<float> wte = test::random_floats(size_t(V) * C, 402);
  std::vector<float> wpe = test::random_floats(size_t(P) * C, 403);
  std::vector<float> dout = test::random_floats(size_t(B) * T * C, 404);
  PositionedTokens() {
    for (int len : {1, 10, 29})  // row 0
      for (int i = 0; i < len; ++i) positions.push_back(i);
    for (int t = 0; t < T; ++t) positions.push_back(t + 20);  // row 1
    for (int t = 0; t < T; ++t) positions.push_back(0);       // row 2
  }
  size_t out_size() const { return size_t(B) * T * C; }
};
using PT = PositionedTokens;

TEST(EncoderPositions, ForwardMatchesNaive) {
  const PT d;
  std::vector<float> out(d.out_size());
  make_cpu_backend()->encoder_forward(DType::f32, out.data(), d.tokens.data(), d.positions.data(),
                                      d.wte.data(), d.wpe.data(), PT::B, PT::T, PT::C);
  const Vec ref = test::encoder_fwd_ref(d.tokens, test::to_double(d.wte), test::to_double(d.wpe),
                                        PT::B, PT::T, PT::C, d.positions.data());
  EXPECT_LT(test::rel_err(out, ref), 1e-6);
}

// dwpe[p] gathers every row at position p (43 of them for p = 0), added into a
// non-zero start as dwte is.
TEST(EncoderPositions, BackwardMatchesNaiveAndAccumulatesRepeatedPositions) {
  const PT d;
  const auto dwte0 = test::random_floats(size_t(PT::V) * PT::C, 405);
  const auto dwpe0 = test::random_floats(size_t(PT::P) * PT::C, 406);
  std::vector<float> dwte = dwte0, dwpe = dwpe0;
  make_cpu_backend()->encoder_backward(DType::f32, dwte.data(), dwpe.data(), d.dout.data(),
                                       d.tokens.data(), d.positions.data(), PT::B, PT::T, PT::C);
  Vec rwte = test::to_double(dwte0), rwpe = test::to_double(dwpe0);
  test::encoder_bwd_ref(rwte, rwpe, test::to_double(d.dout), d.tokens, PT::B, PT::T, PT::C,
                        d.positions.data());
  const double e_wte = test::rel_err(dwte, rwte), e_wpe = test::rel_err(dwpe, rwpe);
  std::printf("encoder backward with positions vs naive: dwte %.2e dwpe %.2e\n", e_wte, e_wpe);
  EXPECT_LT(e_wte, 1e-6);
  EXPECT_LT(e_wpe, 1e-6);
  // Positions no token has (60..63) keep their start exactly.
  for (int p = 60; p < PT::P; ++p)
    for (int c = 0; c < PT::C; ++c)
      ASSERT_EQ(dwpe[size_t(p) * PT::C + c], dwpe0[size_t(p) * PT::C + c]) << "position " << p;
}

// positions[b·T + t] = t: the same table rows in the same order, so fp32 gives
// the bits of positions == null (the null path sums a position's B rows in fp32
// from the start value, the positions path adds them one by one in fp32: the
// same additions).
TEST(EncoderPositions, PositionsEqualToTheIndexGiveTheBitsOfNoPositions) {
  const PT d;
  std::vector<int32_t> index;
  for (int b = 0; b < PT::B; ++b)
    for (int t = 0; t < PT::T; ++t) index.push_back(t);
  auto be = make_cpu_backend();
  std::vector<float> with(d.out_size()), without(d.out_size());
  be->encoder_forward(DType::f32, with.data(), d.tokens.data(), index.data(), d.wte.data(),
                      d.wpe.data(), PT::B, PT::T, PT::C);
  be->encoder_forward(DType::f32, without.data(), d.tokens.data(), nullptr, d.wte.data(),
                      d.wpe.data(), PT::B, PT::T, PT::C);
  EXPECT_EQ(with, without);
  const auto dwpe0 = test::random_floats(size_t(PT::P) * PT::C, 407);
  std::vector<float> gwith = dwpe0, gwithout = dwpe0;
  be->encoder_backward(DType::f32, nullptr, gwith.data(), d.dout.data(), d.tokens.data(),
                       index.data(), PT::B, PT::T, PT::C);
  be->encoder_backward(DType::f32, nullptr, gwithout.data(), d.dout.data(), d.tokens.data(),
                       nullptr, PT::B, PT::T, PT::C);
  EXPECT_EQ(gwith, gwithout);
}

// Each token recurs ≈ 17 times, position 0 43 times: the backward must sum a
// key's rows in fp32 and round once (rounding the bf16 table after every row
// gave dwte 1.3e-2, dwpe 7.6e-3 here).
TEST(EncoderPositions, LowPrecisionMatchesFp32) {
  auto be = make_cpu_backend();
  for (DType dt : {DType::bf16, DType::f16}) {
    PT d;
    d.wte = test::round_to(dt, d.wte);
    d.wpe = test::round_to(dt, d.wpe);
    d.dout = test::round_to(dt, d.dout);
    const double tol = dt == DType::bf16 ? 1e-2 : 2e-3;
    std::vector<float> out32(d.out_size()), gwte32(size_t(PT::V) * PT::C, 0.0f),
        gwpe32(size_t(PT::P) * PT::C, 0.0f);
    be->encoder_forward(DType::f32, out32.data(), d.tokens.data(), d.positions.data(), d.wte.data(),
                        d.wpe.data(), PT::B, PT::T, PT::C);
    be->encoder_backward(DType::f32, gwte32.data(), gwpe32.data(), d.dout.data(), d.tokens.data(),
                         d.positions.data(), PT::B, PT::T, PT::C);
    Buf out(dt, out32.size()), wte(dt, d.wte), wpe(dt, d.wpe), dout(dt, d.dout);
    Buf gwte(dt, gwte32.size()), gwpe(dt, gwpe32.size());
    be->encoder_forward(dt, out.data(), d.tokens.data(), d.positions.data(), wte.data(), wpe.data(),
                        PT::B, PT::T, PT::C);
    be->encoder_backward(dt, gwte.data(), gwpe.data(), dout.data(), d.tokens.data(),
                         d.positions.data(), PT::B, PT::T, PT::C);
    const double e_wte = test::rel_err(gwte.get(), gwte32),
                 e_wpe = test::rel_err(gwpe.get(), gwpe32);
    std::printf("encoder with positions %s vs fp32: dwte %.2e, dwpe %.2e\n",
                std::string(dtype_name(dt)).c_str(), e_wte, e_wpe);
    EXPECT_LT(test::rel_err(out.get(), out32), tol) << dtype_name(dt);
    EXPECT_LT(e_wte, tol) << dtype_name(dt);
    EXPECT_LT(e_wpe, tol) << dtype_name(dt);
  }
}

// Vocabulary shards (tensor parallelism) with positions: V = 50 real ids of 64
// rows in 2 and in 4 shards; wpe (and dwpe) on shard 0 only. Forward summed over
// the shards and backward's shards written into one whole buffer give the bits
// of the whole-vocabulary ops (fp32: adding exact zeros, the same additions).
TEST(EncoderPositions, ShardsSummedGiveTheWholeVocabularyBits) {
  constexpr int B = PT::B, T = PT::T, C = PT::C, Vp = 64, V = 50;
  PT d;
  d.tokens = test::random_ints(size_t(B) * T, V, 408);
  const auto wte = test::random_floats(size_t(Vp) * C, 409);
  auto be = make_cpu_backend();
  std::vector<float> whole(d.out_size());
  be->encoder_forward(DType::f32, whole.data(), d.tokens.data(), d.positions.data(), wte.data(),
                      d.wpe.data(), B, T, C);
  const auto dwte0 = test::random_floats(size_t(Vp) * C, 410);
  const auto dwpe0 = test::random_floats(size_t(PT::P) * C, 411);
  std::vector<float> wdwte = dwte0, wdwpe = dwpe0;
  be->encoder_backward(DType::f32, wdwte.data(), wdwpe.data(), d.dout.data(), d.tokens.data(),
                       d.positions.data(), B, T, C);
  for (int shards : {2, 4}) {
    const int rows = Vp / shards;
    std::vector<float> sum(d.out_size(), 0.0f), sdwte = dwte0, sdwpe = dwpe0;
    for (int s = 0; s < shards; ++s) {
      const size_t first = size_t(s) * rows * C;
      std::vector<float> out(d.out_size(), 7.0f);  // overwritten everywhere
      be->encoder_shard_forward(DType::f32, out.data(), d.tokens.data(), d.positions.data(),
                                wte.data() + first, s == 0 ? d.wpe.data() : nullptr, B, T, C,
                                s * rows, rows);
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += out[i];
      be->encoder_shard_backward(DType::f32, sdwte.data() + first, s == 0 ? sdwpe.data() : nullptr,
                                 d.dout.data(), d.tokens.data(), d.positions.data(), B, T, C,
                                 s * rows, rows);
    }
    EXPECT_EQ(sum, whole) << shards << " shards";
    EXPECT_EQ(sdwte, wdwte) << shards << " shards";
    EXPECT_EQ(sdwpe, wdwpe) << shards << " shards";
  }
}

}  // namespace
}  // namespace hybrid::kernels
