// Every op of the CUDA backend against the CPU backend (the oracle), in fp32,
// fp16 and bf16, on the same dt-rounded inputs; plus the caching allocator on
// real device memory. Skips (with the reason) without a usable CUDA device.
//
// Error metric: rel_err = max|gpu − cpu| / max|cpu| per tensor (reference.h).
// Tolerances (per dtype, stated once): fp32 1e-4 (cuBLAS without TF32 vs oneDNN,
// different summation order); fp16 5e-3 (≈ 10 ulp of 2^-11); bf16 3e-2 (≈ 8 ulp
// of 2^-8). Chained ops (attention backward) get 4× that.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_pair.h"
#include "kernels/ops.h"
#include "kernels/registry.h"
#include "reference.h"

#if HYBRID_HAVE_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace hybrid::kernels {
namespace {

using test::Buf;
using test::CudaOps;
using test::Pair;
using test::random_floats;
using test::random_ints;
using test::RawPair;
using test::rel_err;
using test::tolerance;

TEST_P(CudaOps, GemmAllTransposesWithAlphaBeta) {
  const int M = 37, N = 29, K = 53;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      const int lda = ta ? M : K, ldb = tb ? K : N;
      auto A = pair_rand(size_t(M) * K, 1);
      auto B = pair_rand(size_t(K) * N, 2);
      auto C = pair_rand(size_t(M) * N, 3);
      for (Backend* b : {cpu_.get(), gpu_.get()}) {
        const bool g = b == gpu_.get();
        b->gemm(dt(), ta, tb, M, N, K, 0.75f, g ? A.g() : A.c(), lda, g ? B.g() : B.c(), ldb, 0.5f,
                g ? C.g() : C.c(), N);
      }
      EXPECT_LT(C.err(), tol()) << "trans_a " << ta << " trans_b " << tb;
    }
}

TEST_P(CudaOps, MatmulForwardBackwardAccumulate) {
  const int M = 64, K = 48, N = 40;
  auto inp = pair_rand(size_t(M) * K, 4);
  auto w = pair_rand(size_t(N) * K, 5);
  auto bias = pair_rand(N, 6);
  auto out = pair(std::vector<float>(size_t(M) * N));
  auto out_nb = pair(std::vector<float>(size_t(M) * N));
  cpu_->matmul_forward(dt(), out.c(), inp.c(), w.c(), bias.c(), M, K, N);
  gpu_->matmul_forward(dt(), out.g(), inp.g(), w.g(), bias.g(), M, K, N);
  cpu_->matmul_forward(dt(), out_nb.c(), inp.c(), w.c(), nullptr, M, K, N);
  gpu_->matmul_forward(dt(), out_nb.g(), inp.g(), w.g(), nullptr, M, K, N);
  EXPECT_LT(out.err(), tol());
  EXPECT_LT(out_nb.err(), tol());
  // Gradients start non-zero: backward must add (+=), not overwrite.
  auto dout = pair_rand(size_t(M) * N, 7);
  auto dinp = pair_rand(size_t(M) * K, 8);
  auto dw = pair_rand(size_t(N) * K, 9);
  auto db = pair_rand(N, 10);
  cpu_->matmul_backward(dt(), dinp.c(), dw.c(), db.c(), dout.c(), inp.c(), w.c(), M, K, N);
  gpu_->matmul_backward(dt(), dinp.g(), dw.g(), db.g(), dout.g(), inp.g(), w.g(), M, K, N);
  EXPECT_LT(dinp.err(), tol());
  EXPECT_LT(dw.err(), tol());
  EXPECT_LT(db.err(), tol());
}

#if HYBRID_HAVE_CUDA
TEST_P(CudaOps, MatmulGeluEpilogueMatchesMatmulThenGelu) {
  auto* cuda = dynamic_cast<CudaBackend*>(gpu_.get());
  ASSERT_NE(cuda, nullptr);
  const int M = 64, K = 64, N = 96;
  auto inp = pair_rand(size_t(M) * K, 11);
  auto w = pair_rand(size_t(N) * K, 12);
  auto bias = pair_rand(N, 13);
  auto pre = pair(std::vector<float>(size_t(M) * N));
  auto out = pair(std::vector<float>(size_t(M) * N));
  cpu_->matmul_forward(dt(), pre.c(), inp.c(), w.c(), bias.c(), M, K, N);
  cpu_->gelu_forward(dt(), out.c(), pre.c(), size_t(M) * N);
  cuda->matmul_forward_gelu(dt(), out.g(), pre.g(), inp.g(), w.g(), bias.g(), M, K, N);
  EXPECT_LT(pre.err(), tol());
  // cuBLASLt's GELU is the tanh form too; the output rounds once more.
  EXPECT_LT(out.err(), 2 * tol());
}
#endif

TEST_P(CudaOps, EncoderForwardBackward) {
  const int B = 3, T = 17, C = 40, V = 23;
  auto tokens = random_ints(size_t(B) * T, V, 14);
  tokens[0] = tokens[1] = tokens[5] = 7;  // repeated tokens exercise the accumulation
  RawPair<int32_t> tok(*cpu_, *gpu_, tokens);
  auto wte = pair_rand(size_t(V) * C, 15);
  auto wpe = pair_rand(size_t(T) * C, 16);
  auto out = pair(std::vector<float>(size_t(B) * T * C));
  cpu_->encoder_forward(dt(), out.c(), tok.c(), nullptr, wte.c(), wpe.c(), B, T, C);
  gpu_->encoder_forward(dt(), out.g(), tok.g(), nullptr, wte.g(), wpe.g(), B, T, C);
  EXPECT_LT(out.err(), tol());
  auto dout = pair_rand(size_t(B) * T * C, 17);
  auto dwte = pair_rand(size_t(V) * C, 18);
  auto dwpe = pair_rand(size_t(T) * C, 19);
  cpu_->encoder_backward(dt(), dwte.c(), dwpe.c(), dout.c(), tok.c(), nullptr, B, T, C);
  gpu_->encoder_backward(dt(), dwte.g(), dwpe.g(), dout.g(), tok.g(), nullptr, B, T, C);
  EXPECT_LT(dwte.err(), tol());
  EXPECT_LT(dwpe.err(), tol());
  // Deterministic: a second run on fresh copies gives identical bits.
  auto dwte2 = pair_rand(size_t(V) * C, 18);
  gpu_->encoder_backward(dt(), dwte2.g(), nullptr, dout.g(), tok.g(), nullptr, B, T, C);
  EXPECT_EQ(dwte2.gpu_values(), dwte.gpu_values());
}

TEST_P(CudaOps, LayernormForwardBackward) {
  for (int C : {40, 768}) {
    const int N = 70;
    auto x = pair_rand(size_t(N) * C, 20, -2.0f, 3.0f);
    auto w = pair_rand(C, 21, 0.5f, 1.5f);
    auto b = pair_rand(C, 22);
    auto out = pair(std::vector<float>(size_t(N) * C));
    RawPair<float> mean(*cpu_, *gpu_, std::vector<float>(N)),
        rstd(*cpu_, *gpu_, std::vector<float>(N));
    cpu_->layernorm_forward(dt(), out.c(), mean.c(), rstd.c(), x.c(), w.c(), b.c(), N, C);
    gpu_->layernorm_forward(dt(), out.g(), mean.g(), rstd.g(), x.g(), w.g(), b.g(), N, C);
    EXPECT_LT(out.err(), tol()) << "C=" << C;
    EXPECT_LT(rel_err(mean.gpu_values(), mean.cpu_values()), 1e-5) << "C=" << C;  // fp32 statistics
    EXPECT_LT(rel_err(rstd.gpu_values(), rstd.cpu_values()), 1e-5) << "C=" << C;
    auto dout = pair_rand(size_t(N) * C, 23);
    auto dx = pair_rand(size_t(N) * C, 24);
    auto dw = pair_rand(C, 25);
    auto db = pair_rand(C, 26);
    cpu_->layernorm_backward(dt(), dx.c(), dw.c(), db.c(), dout.c(), x.c(), w.c(), mean.c(),
                             rstd.c(), N, C);
    gpu_->layernorm_backward(dt(), dx.g(), dw.g(), db.g(), dout.g(), x.g(), w.g(), mean.g(),
                             rstd.g(), N, C);
    EXPECT_LT(dx.err(), tol()) << "C=" << C;
    EXPECT_LT(dw.err(), tol()) << "C=" << C;
    EXPECT_LT(db.err(), tol()) << "C=" << C;
  }
}

TEST_P(CudaOps, GeluForwardBackward) {
  const size_t n = 10007;
  auto x = pair_rand(n, 27, -4.0f, 4.0f);
  auto out = pair(std::vector<float>(n));
  cpu_->gelu_forward(dt(), out.c(), x.c(), n);
  gpu_->gelu_forward(dt(), out.g(), x.g(), n);
  EXPECT_LT(out.err(), tol());
  auto dout = pair_rand(n, 28);
  auto dx = pair_rand(n, 29);
  cpu_->gelu_backward(dt(), dx.c(), x.c(), dout.c(), n);
  gpu_->gelu_backward(dt(), dx.g(), x.g(), dout.g(), n);
  EXPECT_LT(dx.err(), tol());
}

// NKV 4: multi-head (GPT-2's [B, T, 3C]); 2 and 1: grouped key/value heads,
// repeated on the way in and their gradients summed over the group on the way out.
TEST_P(CudaOps, AttentionForwardBackward) {
  const int B = 2, T = 33, C = 48, NH = 4, hs = C / NH;
  for (const int NKV : {4, 2, 1}) {
    const size_t row = size_t(C) + 2 * size_t(NKV) * hs;
    auto qkv = pair_rand(size_t(B) * T * row, 30);
    auto out = pair(std::vector<float>(size_t(B) * T * C));
    const size_t cs = cpu_->attention_saved_bytes(dt(), B, T, C, NH);
    const size_t gs = gpu_->attention_saved_bytes(dt(), B, T, C, NH);
    EXPECT_EQ(gs, size_t(B) * NH * T * T * dtype_size(dt()));
    void* csaved = cpu_->allocate(cs ? cs : 1);
    void* gsaved = gpu_->allocate(gs);
    cpu_->attention_forward(dt(), out.c(), csaved, qkv.c(), nullptr, B, T, C, NH, NKV);
    gpu_->attention_forward(dt(), out.g(), gsaved, qkv.g(), nullptr, B, T, C, NH, NKV);
    EXPECT_LT(out.err(), 2 * tol()) << "NKV " << NKV;
    auto dout = pair_rand(size_t(B) * T * C, 31);
    auto dqkv = pair_rand(size_t(B) * T * row, 32);
    cpu_->attention_backward(dt(), dqkv.c(), dout.c(), qkv.c(), out.c(), csaved, nullptr, B, T, C,
                             NH, NKV);
    gpu_->attention_backward(dt(), dqkv.g(), dout.g(), qkv.g(), out.g(), gsaved, nullptr, B, T, C,
                             NH, NKV);
    EXPECT_LT(dqkv.err(), 4 * tol()) << "NKV " << NKV;
    cpu_->deallocate(csaved, cs ? cs : 1);
    gpu_->deallocate(gsaved, gs);
  }
}

TEST_P(CudaOps, ResidualConvertAddScale) {
  const size_t n = 4099;
  auto a = pair_rand(n, 33);
  auto b = pair_rand(n, 34);
  auto out = pair(std::vector<float>(n));
  cpu_->residual_forward(dt(), out.c(), a.c(), b.c(), n);
  gpu_->residual_forward(dt(), out.g(), a.g(), b.g(), n);
  EXPECT_LT(out.err(), tol());
  cpu_->scale(dt(), a.c(), n, -1.5f);
  gpu_->scale(dt(), a.g(), n, -1.5f);
  EXPECT_LT(a.err(), tol());
  for (DType src : {DType::f32, DType::f16, DType::bf16}) {
    Pair s(*cpu_, *gpu_, src, random_floats(n, 35));
    auto dst = pair_rand(n, 36);
    cpu_->add(dt(), dst.c(), src, s.c(), n, 0.25f);
    gpu_->add(dt(), dst.g(), src, s.g(), n, 0.25f);
    EXPECT_LT(dst.err(), tol()) << "add from " << dtype_name(src);
    cpu_->convert(dt(), dst.c(), src, s.c(), n);
    gpu_->convert(dt(), dst.g(), src, s.g(), n);
    // A conversion is exact rounding: identical bits.
    EXPECT_EQ(dst.gpu_values(), dst.cpu_values()) << "convert from " << dtype_name(src);
  }
}

TEST_P(CudaOps, CrossEntropyForwardBackwardInPlace) {
  const int N = 37, V = 50, Vp = 64;
  auto logits_v = random_floats(size_t(N) * Vp, 37, -3.0f, 3.0f);
  auto logits = pair(logits_v);
  RawPair<int32_t> targets(*cpu_, *gpu_, random_ints(N, V, 38));
  RawPair<float> losses(*cpu_, *gpu_, std::vector<float>(N)),
      lse(*cpu_, *gpu_, std::vector<float>(N));
  cpu_->cross_entropy_forward(dt(), losses.c(), lse.c(), logits.c(), targets.c(), N, V, Vp);
  gpu_->cross_entropy_forward(dt(), losses.g(), lse.g(), logits.g(), targets.g(), N, V, Vp);
  EXPECT_LT(rel_err(losses.gpu_values(), losses.cpu_values()), 1e-5);  // fp32 statistics
  EXPECT_LT(rel_err(lse.gpu_values(), lse.cpu_values()), 1e-5);
  auto dlogits = pair(std::vector<float>(size_t(N) * Vp, 5.0f));  // overwritten, not accumulated
  cpu_->cross_entropy_backward(dt(), dlogits.c(), logits.c(), lse.c(), targets.c(), 1.0f / N, N, V,
                               Vp);
  gpu_->cross_entropy_backward(dt(), dlogits.g(), logits.g(), lse.g(), targets.g(), 1.0f / N, N, V,
                               Vp);
  EXPECT_LT(dlogits.err(), tol());
  const auto g = dlogits.gpu_values();
  for (int i = 0; i < N; ++i)
    for (int j = V; j < Vp; ++j)
      ASSERT_EQ(g[size_t(i) * Vp + j], 0.0f) << "padding " << i << "," << j;
  // In place: dlogits aliasing logits gives the same result.
  gpu_->cross_entropy_backward(dt(), logits.g(), logits.g(), lse.g(), targets.g(), 1.0f / N, N, V,
                               Vp);
  EXPECT_EQ(logits.gpu_values(), g);
}

// Tensor parallelism: every vocabulary-shard op on each shard of V real ids of
// Vp, in 2 shards and in 4 (two of them without real columns).
struct VocabSplit {
  int V, shards;
};
constexpr int kShardVp = 64;
constexpr VocabSplit kVocabSplits[] = {{50, 2}, {30, 4}};

void* element(void* p, size_t i, DType dt) { return static_cast<char*>(p) + i * dtype_size(dt); }

TEST_P(CudaOps, VocabShardEncoderForwardBackward) {
  const int B = 3, T = 17, C = 40;
  for (const VocabSplit& sp : kVocabSplits) {
    const int rows = kShardVp / sp.shards;
    RawPair<int32_t> tok(*cpu_, *gpu_, random_ints(size_t(B) * T, sp.V, 61));
    auto wte = pair_rand(size_t(kShardVp) * C, 62);
    auto wpe = pair_rand(size_t(T) * C, 63);
    auto dout = pair_rand(size_t(B) * T * C, 64);
    auto dwte = pair_rand(size_t(kShardVp) * C, 65);  // each shard accumulates into its rows
    auto dwpe = pair_rand(size_t(T) * C, 66);
    for (int s = 0; s < sp.shards; ++s) {
      const int begin = s * rows;
      const size_t first = size_t(begin) * C;
      auto out = pair(std::vector<float>(size_t(B) * T * C, 5.0f));
      cpu_->encoder_shard_forward(dt(), out.c(), tok.c(), nullptr, element(wte.c(), first, dt()),
                                  s == 0 ? wpe.c() : nullptr, B, T, C, begin, rows);
      gpu_->encoder_shard_forward(dt(), out.g(), tok.g(), nullptr, element(wte.g(), first, dt()),
                                  s == 0 ? wpe.g() : nullptr, B, T, C, begin, rows);
      EXPECT_LT(out.err(), tol()) << "V = " << sp.V << ", shard " << s;
      cpu_->encoder_shard_backward(dt(), element(dwte.c(), first, dt()),
                                   s == 0 ? dwpe.c() : nullptr, dout.c(), tok.c(), nullptr, B, T, C,
                                   begin, rows);
      gpu_->encoder_shard_backward(dt(), element(dwte.g(), first, dt()),
                                   s == 0 ? dwpe.g() : nullptr, dout.g(), tok.g(), nullptr, B, T, C,
                                   begin, rows);
    }
    EXPECT_LT(dwte.err(), tol()) << "V = " << sp.V;
    EXPECT_LT(dwpe.err(), tol()) << "V = " << sp.V;
  }
}

TEST_P(CudaOps, VocabShardCrossEntropyStatsCombineAndBackwardInPlace) {
  const int N = 37;
  const float dloss = 1.0f / N;
  for (const VocabSplit& sp : kVocabSplits) {
    const int rows = kShardVp / sp.shards;
    RawPair<int32_t> targets(*cpu_, *gpu_, random_ints(N, sp.V, 67));
    RawPair<float> stats(*cpu_, *gpu_, std::vector<float>(size_t(sp.shards) * 2 * N));
    std::vector<std::vector<float>> shard_logits;
    for (int s = 0; s < sp.shards; ++s) {
      shard_logits.push_back(random_floats(size_t(N) * rows, 68 + s, -3.0f, 3.0f));
      const int begin = s * rows, real = std::clamp(sp.V - begin, 0, rows);
      auto logits = pair(shard_logits.back());
      cpu_->cross_entropy_shard_forward(dt(), stats.c() + size_t(s) * 2 * N, logits.c(),
                                        targets.c(), N, begin, real, rows);
      gpu_->cross_entropy_shard_forward(dt(), stats.g() + size_t(s) * 2 * N, logits.g(),
                                        targets.g(), N, begin, real, rows);
    }
    // fp32 statistics; a shard without real columns reports -inf on both.
    const auto sc = stats.cpu_values(), sg = stats.gpu_values();
    for (size_t i = 0; i < sc.size(); ++i) {
      if (std::isinf(sc[i]))
        EXPECT_EQ(sg[i], sc[i]) << "V = " << sp.V << ", stat " << i;
      else
        EXPECT_NEAR(sg[i], sc[i], 1e-5 * std::max(1.0f, std::abs(sc[i])))
            << "V = " << sp.V << ", stat " << i;
    }
    RawPair<float> losses(*cpu_, *gpu_, std::vector<float>(N)),
        lse(*cpu_, *gpu_, std::vector<float>(N));
    cpu_->cross_entropy_combine_shards(losses.c(), lse.c(), stats.c(), targets.c(), sp.shards, N);
    gpu_->cross_entropy_combine_shards(losses.g(), lse.g(), stats.g(), targets.g(), sp.shards, N);
    EXPECT_LT(rel_err(losses.gpu_values(), losses.cpu_values()), 1e-5) << "V = " << sp.V;
    EXPECT_LT(rel_err(lse.gpu_values(), lse.cpu_values()), 1e-5) << "V = " << sp.V;
    for (int s = 0; s < sp.shards; ++s) {
      const int begin = s * rows, real = std::clamp(sp.V - begin, 0, rows);
      auto logits = pair(shard_logits[size_t(s)]);
      auto dlogits = pair(std::vector<float>(size_t(N) * rows, 5.0f));  // overwritten
      cpu_->cross_entropy_shard_backward(dt(), dlogits.c(), logits.c(), lse.c(), targets.c(), dloss,
                                         N, begin, real, rows);
      gpu_->cross_entropy_shard_backward(dt(), dlogits.g(), logits.g(), lse.g(), targets.g(), dloss,
                                         N, begin, real, rows);
      EXPECT_LT(dlogits.err(), tol()) << "V = " << sp.V << ", shard " << s;
      const auto g = dlogits.gpu_values();
      for (int i = 0; i < N; ++i)
        for (int j = real; j < rows; ++j)
          ASSERT_EQ(g[size_t(i) * rows + j], 0.0f) << "padding " << i << "," << j;
      gpu_->cross_entropy_shard_backward(dt(), logits.g(), logits.g(), lse.g(), targets.g(), dloss,
                                         N, begin, real, rows);
      EXPECT_EQ(logits.gpu_values(), g) << "in place, V = " << sp.V << ", shard " << s;
    }
  }
}

TEST_P(CudaOps, GradStatsSumOfSquaresAndNonFinite) {
  const size_t n = 300001;
  auto v = random_floats(n, 39);
  Pair x = pair(v);
  const GradStats c = cpu_->grad_stats(dt(), x.c(), n);
  const GradStats g = gpu_->grad_stats(dt(), x.g(), n);
  EXPECT_FALSE(g.non_finite);
  EXPECT_NEAR(g.sum_squares, c.sum_squares, 1e-5 * c.sum_squares);
  // One non-finite element anywhere sets the flag.
  v[n - 3] = std::numeric_limits<float>::infinity();
  Pair y = pair(v);
  EXPECT_TRUE(gpu_->grad_stats(dt(), y.g(), n).non_finite);
  v[n - 3] = std::nanf("");
  Pair z = pair(v);
  EXPECT_TRUE(gpu_->grad_stats(dt(), z.g(), n).non_finite);
}

TEST_P(CudaOps, AdamWUpdatesMasterStateAndLowPrecisionCopy) {
  const size_t n = 5003;
  AdamWParams p;
  p.lr = 1e-2f;
  p.weight_decay = 0.1f;
  p.step = 3;
  for (bool decoupled : {true, false}) {
    p.decoupled_weight_decay = decoupled;
    auto master_v = random_floats(n, 40), m_v = random_floats(n, 41, -0.1f, 0.1f),
         v_v = random_floats(n, 42, 0.0f, 0.01f);
    RawPair<float> master(*cpu_, *gpu_, master_v), m(*cpu_, *gpu_, m_v), v(*cpu_, *gpu_, v_v);
    auto grad = pair_rand(n, 43);
    auto param = pair(std::vector<float>(n));
    cpu_->adamw(p, master.c(), m.c(), v.c(), dt(), grad.c(), 0.5f, dt(), param.c(), n);
    gpu_->adamw(p, master.g(), m.g(), v.g(), dt(), grad.g(), 0.5f, dt(), param.g(), n);
    EXPECT_LT(rel_err(master.gpu_values(), master.cpu_values()), 1e-6) << decoupled;
    EXPECT_LT(rel_err(m.gpu_values(), m.cpu_values()), 1e-6) << decoupled;
    EXPECT_LT(rel_err(v.gpu_values(), v.cpu_values()), 1e-6) << decoupled;
    EXPECT_LT(param.err(), tol()) << decoupled;
  }
}

TEST_P(CudaOps, SgdMatchesTheCpuBackend) {
  const size_t n = 5003;
  SgdParams p;
  p.lr = 1e-2f;
  p.momentum = 0.9f;
  p.dampening = 0.1f;
  p.weight_decay = 0.05f;
  for (bool nesterov : {false, true}) {
    p.nesterov = nesterov;
    p.dampening = nesterov ? 0.0f : 0.1f;
    RawPair<float> master(*cpu_, *gpu_, random_floats(n, 50)),
        buf(*cpu_, *gpu_, random_floats(n, 51, -0.1f, 0.1f));
    auto param = pair(std::vector<float>(n));
    for (int t = 1; t <= 3; ++t) {
      p.first_step = t == 1;
      auto grad = pair_rand(n, 52 + uint32_t(t));
      cpu_->sgd(p, master.c(), buf.c(), dt(), grad.c(), 0.5f, dt(), param.c(), n);
      gpu_->sgd(p, master.g(), buf.g(), dt(), grad.g(), 0.5f, dt(), param.g(), n);
    }
    EXPECT_LT(rel_err(master.gpu_values(), master.cpu_values()), 1e-6) << nesterov;
    EXPECT_LT(rel_err(buf.gpu_values(), buf.cpu_values()), 1e-6) << nesterov;
    EXPECT_LT(param.err(), tol()) << nesterov;
  }
}

// Segments from one element to past the split threshold; sums agree with the
// CPU's (different summation order: 1e-5), and so do the updated weights.
TEST_P(CudaOps, LambTwoPassesMatchTheCpuBackend) {
  const std::vector<int64_t> bounds = {0, 1, 769, 769, 5000, 300000, 300777};
  const int segs = int(bounds.size()) - 1;
  const size_t n = size_t(bounds.back());
  LambParams p;
  p.lr = 1e-3f;
  p.weight_decay = 0.01f;
  RawPair<float> master(*cpu_, *gpu_, random_floats(n, 60)),
      m(*cpu_, *gpu_, random_floats(n, 61, -0.1f, 0.1f)),
      v(*cpu_, *gpu_, random_floats(n, 62, 0.0f, 0.01f));
  auto param = pair(std::vector<float>(n));
  for (int t = 1; t <= 3; ++t) {
    p.step = t;
    auto grad = pair_rand(n, 63 + uint32_t(t));
    std::vector<double> sc(2 * size_t(segs), 0.0), sg(2 * size_t(segs), 0.0);
    cpu_->lamb_moments(p, master.c(), m.c(), v.c(), dt(), grad.c(), 0.5f, bounds.data(), segs,
                       sc.data());
    gpu_->lamb_moments(p, master.g(), m.g(), v.g(), dt(), grad.g(), 0.5f, bounds.data(), segs,
                       sg.data());
    std::vector<float> coeffs(static_cast<size_t>(segs));
    for (int s = 0; s < segs; ++s) {
      EXPECT_NEAR(sg[2 * s], sc[2 * s], 1e-5 * sc[2 * s]) << "segment " << s;
      EXPECT_NEAR(sg[2 * s + 1], sc[2 * s + 1], 1e-5 * sc[2 * s + 1]) << "segment " << s;
      coeffs[size_t(s)] = sc[2 * s + 1] > 0 ? float(std::sqrt(sc[2 * s] / sc[2 * s + 1])) : 1.0f;
    }
    cpu_->lamb_update(p, master.c(), m.c(), v.c(), bounds.data(), segs, coeffs.data(), dt(),
                      param.c());
    gpu_->lamb_update(p, master.g(), m.g(), v.g(), bounds.data(), segs, coeffs.data(), dt(),
                      param.g());
  }
  EXPECT_LT(rel_err(master.gpu_values(), master.cpu_values()), 1e-6);
  EXPECT_LT(rel_err(m.gpu_values(), m.cpu_values()), 1e-6);
  EXPECT_LT(rel_err(v.gpu_values(), v.cpu_values()), 1e-6);
  EXPECT_LT(param.err(), tol());
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, CudaOps, ::testing::Values(DType::f32, DType::f16, DType::bf16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

#if HYBRID_HAVE_CUDA
TEST(CudaAllocator, ReusesFreedBlocksAndNamesTheSizeOnOom) {
  std::unique_ptr<Backend> b;
  try {
    b = make_backend("cuda", 0).backend;
  } catch (const std::exception& e) {
    GTEST_SKIP() << "no CUDA backend: " << e.what();
  }
  auto& cuda = dynamic_cast<CudaBackend&>(*b);
  const auto s0 = cuda.memory_stats();
  void* p = b->allocate(3 << 20);
  const auto s1 = cuda.memory_stats();
  EXPECT_EQ(s1.allocated - s0.allocated, uint64_t(4) << 20);  // 3 MiB rounds to a 2 MiB multiple
  b->deallocate(p, 3 << 20);
  EXPECT_EQ(cuda.memory_stats().cached - s0.cached, uint64_t(4) << 20);
  void* q = b->allocate((3 << 20) + 100);  // same class: the cached block comes back
  EXPECT_EQ(q, p);
  EXPECT_EQ(cuda.memory_stats().cache_hits, s1.cache_hits + 1);
  EXPECT_EQ(cuda.memory_stats().upstream_allocs, s1.upstream_allocs);
  EXPECT_GE(cuda.memory_stats().peak_allocated, s1.allocated);
  b->deallocate(q, 0);
  try {
    b->allocate(size_t(1) << 50);  // 1 PiB
    FAIL() << "allocating 1 PiB succeeded";
  } catch (const cuda::DeviceOutOfMemoryError& e) {
    EXPECT_EQ(e.requested(), size_t(1) << 50);
    EXPECT_NE(std::string(e.what()).find("1024.00 TiB"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
  cuda.empty_cache();
  EXPECT_EQ(cuda.memory_stats().cached, 0u);
}
#endif

}  // namespace
}  // namespace hybrid::kernels
