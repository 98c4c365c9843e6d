// encoder_forward/backward (token + position embedding) against the naive
// reference, finite differences, repeated tokens, fp16/bf16 and "+=".
#include <gtest/gtest.h>

#include "reference.h"

namespace hybrid::kernels {
namespace {

using test::Buf;
using test::Vec;

constexpr int B = 3, T = 10, C = 136, V = 7;  // V small: tokens repeat (the race case)
constexpr double kTolF32 = 1e-6;              // forward is one add, backward sums ≤ 30 terms
constexpr double kTolFd = 1e-6;               // the loss is linear: differences are exact-ish

struct Data {
  std::vector<int32_t> tokens = test::random_ints(size_t(B) * T, V, 21);
  std::vector<float> wte = test::random_floats(size_t(V) * C, 22);
  std::vector<float> wpe = test::random_floats(size_t(T) * C, 23);
  std::vector<float> dout = test::random_floats(size_t(B) * T * C, 24);
};

TEST(Encoder, ForwardMatchesNaive) {
  Data d;
  std::vector<float> out(size_t(B) * T * C);
  make_cpu_backend()->encoder_forward(DType::f32, out.data(), d.tokens.data(), nullptr,
                                      d.wte.data(), d.wpe.data(), B, T, C);
  EXPECT_LT(test::rel_err(out, test::encoder_fwd_ref(d.tokens, test::to_double(d.wte),
                                                     test::to_double(d.wpe), B, T, C)),
            kTolF32);
}

TEST(Encoder, BackwardMatchesNaiveFiniteDifferencesAndAccumulates) {
  Data d;
  auto be = make_cpu_backend();
  // Start from non-zero gradients: the op must add, not overwrite.
  const auto dwte0 = test::random_floats(size_t(V) * C, 25),
             dwpe0 = test::random_floats(size_t(T) * C, 26);
  std::vector<float> dwte = dwte0, dwpe = dwpe0;
  be->encoder_backward(DType::f32, dwte.data(), dwpe.data(), d.dout.data(), d.tokens.data(),
                       nullptr, B, T, C);
  Vec rwte = test::to_double(dwte0), rwpe = test::to_double(dwpe0);
  test::encoder_bwd_ref(rwte, rwpe, test::to_double(d.dout), d.tokens, B, T, C);
  EXPECT_LT(test::rel_err(dwte, rwte), kTolF32);
  EXPECT_LT(test::rel_err(dwpe, rwpe), kTolF32);

  // Finite differences of L = Σ out ⊙ dout, gradient alone (from zero).
  std::vector<float> gwte(size_t(V) * C, 0.0f), gwpe(size_t(T) * C, 0.0f);
  be->encoder_backward(DType::f32, gwte.data(), gwpe.data(), d.dout.data(), d.tokens.data(),
                       nullptr, B, T, C);
  Vec wte = test::to_double(d.wte), wpe = test::to_double(d.wpe);
  const Vec R = test::to_double(d.dout);
  auto loss = [&] { return test::dot(test::encoder_fwd_ref(d.tokens, wte, wpe, B, T, C), R); };
  const double e_wte = test::rel_err(gwte, test::finite_diff(wte, loss));
  const double e_wpe = test::rel_err(gwpe, test::finite_diff(wpe, loss));
  std::printf("encoder backward vs finite differences: dwte %.2e dwpe %.2e\n", e_wte, e_wpe);
  EXPECT_LT(e_wte, kTolFd);
  EXPECT_LT(e_wpe, kTolFd);
}

TEST(Encoder, LowPrecisionMatchesFp32) {
  auto be = make_cpu_backend();
  for (DType dt : {DType::bf16, DType::f16}) {
    Data d;
    d.wte = test::round_to(dt, d.wte);
    d.wpe = test::round_to(dt, d.wpe);
    d.dout = test::round_to(dt, d.dout);
    const double tol = dt == DType::bf16 ? 1e-2 : 2e-3;
    std::vector<float> out32(size_t(B) * T * C), gwte32(size_t(V) * C, 0.0f),
        gwpe32(size_t(T) * C, 0.0f);
    be->encoder_forward(DType::f32, out32.data(), d.tokens.data(), nullptr, d.wte.data(),
                        d.wpe.data(), B, T, C);
    be->encoder_backward(DType::f32, gwte32.data(), gwpe32.data(), d.dout.data(), d.tokens.data(),
                         nullptr, B, T, C);
    Buf out(dt, out32.size()), wte(dt, d.wte), wpe(dt, d.wpe), dout(dt, d.dout);
    Buf gwte(dt, gwte32.size()), gwpe(dt, gwpe32.size());
    be->encoder_forward(dt, out.data(), d.tokens.data(), nullptr, wte.data(), wpe.data(), B, T, C);
    be->encoder_backward(dt, gwte.data(), gwpe.data(), dout.data(), d.tokens.data(), nullptr, B, T,
                         C);
    EXPECT_LT(test::rel_err(out.get(), out32), tol) << dtype_name(dt);
    EXPECT_LT(test::rel_err(gwte.get(), gwte32), tol) << dtype_name(dt);
    EXPECT_LT(test::rel_err(gwpe.get(), gwpe32), tol) << dtype_name(dt);
  }
}

}  // namespace
}  // namespace hybrid::kernels
