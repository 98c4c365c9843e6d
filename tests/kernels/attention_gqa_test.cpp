// Grouped-query attention (NKV key/value heads shared by NH / NKV query heads
// each) against an independent construction: multi-head attention, checked
// against the naive double reference in attention_test.cpp, over a qkv whose
// key and value heads are the grouped ones repeated (Hugging Face's
// repeat_kv). Forward outputs and saved statistics equal; query gradients
// equal; a shared head's key and value gradients are the sum of its query
// heads' (summed here in double).
#include <gtest/gtest.h>

#include "reference.h"

namespace hybrid::kernels {
namespace {

using test::Buf;

struct GqaShape {
  int B, T, NH, NKV, hs;
  int C() const { return NH * hs; }
  size_t ld() const { return size_t(C()) + 2 * size_t(NKV) * hs; }
  size_t group() const { return size_t(NH / NKV); }
};

struct Outputs {
  std::vector<float> out, saved, dqkv;
};

Outputs run(DType dt, int B, int T, int C, int NH, int NKV, const std::vector<float>& qkv,
            const std::vector<float>& dout, const std::vector<float>& dqkv0) {
  auto be = make_cpu_backend();
  Buf bqkv(dt, qkv), bdout(dt, dout), bdqkv(dt, dqkv0), bout(dt, std::vector<float>(dout.size()));
  std::vector<float> saved(be->attention_saved_bytes(dt, B, T, C, NH) / sizeof(float));
  be->attention_forward(dt, bout.data(), saved.data(), bqkv.data(), nullptr, B, T, C, NH, NKV);
  be->attention_backward(dt, bdqkv.data(), bdout.data(), bqkv.data(), bout.data(), saved.data(),
                         nullptr, B, T, C, NH, NKV);
  return {bout.get(), saved, bdqkv.get()};
}

// The multi-head qkv [B, T, 3C] whose query head h reads key/value head h / group.
std::vector<float> repeat_kv(const GqaShape& s, const std::vector<float>& qkv) {
  const size_t C = size_t(s.C()), hs = size_t(s.hs);
  std::vector<float> out(size_t(s.B) * s.T * 3 * C);
  for (size_t row = 0; row < size_t(s.B) * s.T; ++row) {
    const float* src = qkv.data() + row * s.ld();
    float* dst = out.data() + row * 3 * C;
    std::copy_n(src, C, dst);
    for (size_t h = 0; h < size_t(s.NH); ++h) {
      const size_t g = h / s.group();
      std::copy_n(src + C + g * hs, hs, dst + C + h * hs);
      std::copy_n(src + C + (size_t(s.NKV) + g) * hs, hs, dst + 2 * C + h * hs);
    }
  }
  return out;
}

// The grouped dqkv from a multi-head one: query part as is, each shared key
// and value head the sum of its group's, plus the starting dqkv0.
test::Vec group_grads(const GqaShape& s, const std::vector<float>& mha,
                      const std::vector<float>& dqkv0) {
  const size_t C = size_t(s.C()), hs = size_t(s.hs);
  test::Vec out = test::to_double(dqkv0);
  for (size_t row = 0; row < size_t(s.B) * s.T; ++row) {
    const float* src = mha.data() + row * 3 * C;
    double* dst = out.data() + row * s.ld();
    for (size_t c = 0; c < C; ++c) dst[c] += src[c];
    for (size_t h = 0; h < size_t(s.NH); ++h) {
      const size_t g = h / s.group();
      for (size_t d = 0; d < hs; ++d) {
        dst[C + g * hs + d] += src[C + h * hs + d];
        dst[C + (size_t(s.NKV) + g) * hs + d] += src[2 * C + h * hs + d];
      }
    }
  }
  return out;
}

// T = 70 crosses the kernel's 64-row blocks; NKV 2 of 4 (Llama's grouping),
// 1 (multi-query) and 4 (multi-head: the layouts coincide).
TEST(GroupedQueryAttention, EqualsMultiHeadAttentionWithRepeatedKeysAndValues) {
  for (const GqaShape s :
       {GqaShape{2, 70, 4, 2, 12}, GqaShape{1, 33, 6, 1, 8}, GqaShape{2, 17, 4, 4, 6}}) {
    const size_t n_qkv = size_t(s.B) * s.T * s.ld(), n_out = size_t(s.B) * s.T * s.C();
    const auto qkv = test::random_floats(n_qkv, 61, -2.0f, 2.0f);
    const auto dout = test::random_floats(n_out, 62);
    const auto dqkv0 = test::random_floats(n_qkv, 63);  // backward adds (+=) into it
    const Outputs gqa = run(DType::f32, s.B, s.T, s.C(), s.NH, s.NKV, qkv, dout, dqkv0);
    const auto wide = repeat_kv(s, qkv);
    const Outputs mha = run(DType::f32, s.B, s.T, s.C(), s.NH, s.NH, wide, dout,
                            std::vector<float>(wide.size(), 0.0f));
    const std::string at = "NH " + std::to_string(s.NH) + ", NKV " + std::to_string(s.NKV);
    EXPECT_LT(test::rel_err(gqa.out, test::to_double(mha.out)), 1e-6) << at;
    EXPECT_LT(test::rel_err(gqa.saved, test::to_double(mha.saved)), 1e-6) << at;
    const double err = test::rel_err(gqa.dqkv, group_grads(s, mha.dqkv, dqkv0));
    std::printf("grouped-query attention backward (%s) vs multi-head, summed: %.2e\n", at.c_str(),
                err);
    EXPECT_LT(err, 1e-5) << at;
  }
}

TEST(GroupedQueryAttention, LowPrecisionMatchesFp32) {
  const GqaShape s{2, 40, 4, 2, 8};
  const size_t n_qkv = size_t(s.B) * s.T * s.ld(), n_out = size_t(s.B) * s.T * s.C();
  for (DType dt : {DType::bf16, DType::f16}) {
    const auto qkv = test::round_to(dt, test::random_floats(n_qkv, 64));
    const auto dout = test::round_to(dt, test::random_floats(n_out, 65));
    const std::vector<float> zeros(n_qkv, 0.0f);
    const double tol = dt == DType::bf16 ? 1e-2 : 2e-3;
    const Outputs r32 = run(DType::f32, s.B, s.T, s.C(), s.NH, s.NKV, qkv, dout, zeros);
    const Outputs r = run(dt, s.B, s.T, s.C(), s.NH, s.NKV, qkv, dout, zeros);
    EXPECT_LT(test::rel_err(r.out, test::to_double(r32.out)), tol) << dtype_name(dt);
    EXPECT_LT(test::rel_err(r.dqkv, test::to_double(r32.dqkv)), tol) << dtype_name(dt);
  }
}

TEST(GroupedQueryAttention, KeyValueHeadsThatDoNotDivideTheHeadsAreRefusedNamingBoth) {
  auto be = make_cpu_backend();
  std::vector<float> buf(4096);
  try {
    be->attention_forward(DType::f32, buf.data(), buf.data(), buf.data(), nullptr, 1, 4, 12, 6, 4);
    FAIL() << "6 heads over 4 key/value heads ran";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("NH = 6, NKV = 4"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hybrid::kernels
