// FLOP formulas against an independent count: naive implementations of each op,
// written over a scalar type that counts every arithmetic operation it performs.
// Per-row scalar work (a row's mean, rstd) runs in plain double, as the convention
// in docs/profiler.md leaves it uncounted. Counts must match exactly.
#include "profiler/flops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace hybrid::profiler::flops {
namespace {

uint64_t g_ops = 0;

// A float that counts its arithmetic: every +, -, *, /, unary -, exp, log, tanh,
// sqrt and max is one operation.
struct F {
  double v = 0;
};
F operator+(F a, F b) { return ++g_ops, F{a.v + b.v}; }
F operator-(F a, F b) { return ++g_ops, F{a.v - b.v}; }
F operator*(F a, F b) { return ++g_ops, F{a.v * b.v}; }
F operator/(F a, F b) { return ++g_ops, F{a.v / b.v}; }
F operator-(F a) { return ++g_ops, F{-a.v}; }
F operator+(double a, F b) { return F{a} + b; }
F operator-(double a, F b) { return F{a} - b; }
F operator*(double a, F b) { return F{a} * b; }
F operator-(F a, double b) { return a - F{b}; }
F operator*(F a, double b) { return a * F{b}; }
F operator/(F a, double b) { return a / F{b}; }
F operator+(F a, double b) { return a + F{b}; }
F cexp(F a) { return ++g_ops, F{std::exp(a.v)}; }
F clog(F a) { return ++g_ops, F{std::log(a.v)}; }
F ctanh(F a) { return ++g_ops, F{std::tanh(a.v)}; }
F csqrt(F a) { return ++g_ops, F{std::sqrt(a.v)}; }
F cmax(F a, F b) { return ++g_ops, F{std::max(a.v, b.v)}; }

std::vector<F> values(size_t n, double seed) {
  std::vector<F> v(n);
  for (size_t i = 0; i < n; ++i) v[i].v = std::sin(seed + 0.37 * double(i));
  return v;
}

template <class Fn>
uint64_t count(Fn&& fn) {
  g_ops = 0;
  fn();
  return g_ops;
}

// out[M,N] = in[M,K]·W[N,K]ᵀ (+ b)
uint64_t naive_matmul_forward(int M, int K, int N, bool bias) {
  auto in = values(static_cast<size_t>(M * K), 1), w = values(static_cast<size_t>(N * K), 2),
       b = values(static_cast<size_t>(N), 3);
  std::vector<F> out(static_cast<size_t>(M * N));
  return count([&] {
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        F acc{0};
        for (int k = 0; k < K; ++k) acc = acc + in[m * K + k] * w[n * K + k];
        out[m * N + n] = bias ? acc + b[n] : acc;
      }
  });
}

uint64_t naive_matmul_backward(int M, int K, int N, bool bias, bool need_dinp) {
  auto in = values(static_cast<size_t>(M * K), 1), w = values(static_cast<size_t>(N * K), 2),
       dout = values(static_cast<size_t>(M * N), 3);
  std::vector<F> dinp(static_cast<size_t>(M * K)), dw(static_cast<size_t>(N * K)),
      db(static_cast<size_t>(N));
  return count([&] {
    if (need_dinp)
      for (int m = 0; m < M; ++m)
        for (int k = 0; k < K; ++k) {
          F acc{0};
          for (int n = 0; n < N; ++n) acc = acc + dout[m * N + n] * w[n * K + k];
          dinp[m * K + k] = acc;
        }
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < K; ++k) {
        F acc{0};
        for (int m = 0; m < M; ++m) acc = acc + dout[m * N + n] * in[m * K + k];
        dw[n * K + k] = acc;
      }
    if (bias)
      for (int n = 0; n < N; ++n) {
        F acc{0};
        for (int m = 0; m < M; ++m) acc = acc + dout[m * N + n];
        db[n] = acc;
      }
  });
}

// Scores, scale, softmax and ·V of one head, for every (batch, head).
uint64_t naive_attention_forward(int B, int T, int C, int NH, bool causal) {
  const int hs = C / NH;
  auto q = values(static_cast<size_t>(T * hs), 1), k = values(static_cast<size_t>(T * hs), 2),
       v = values(static_cast<size_t>(T * hs), 3);
  const double scale = 1.0 / std::sqrt(double(hs));
  return count([&] {
    for (int bh = 0; bh < B * NH; ++bh)
      for (int t = 0; t < T; ++t) {
        const int n = causal ? t + 1 : T;
        std::vector<F> s(static_cast<size_t>(n)), p(static_cast<size_t>(n));
        F mx{-std::numeric_limits<double>::infinity()};
        for (int u = 0; u < n; ++u) {
          F dot{0};
          for (int d = 0; d < hs; ++d) dot = dot + q[t * hs + d] * k[u * hs + d];
          s[u] = dot * scale;
          mx = cmax(mx, s[u]);
        }
        F sum{0};
        for (int u = 0; u < n; ++u) {
          p[u] = cexp(s[u] - mx);
          sum = sum + p[u];
        }
        for (int u = 0; u < n; ++u) p[u] = p[u] / sum;
        for (int d = 0; d < hs; ++d) {
          F acc{0};
          for (int u = 0; u < n; ++u) acc = acc + p[u] * v[u * hs + d];
        }
      }
  });
}

uint64_t naive_attention_backward(int B, int T, int C, int NH, bool causal) {
  const int hs = C / NH;
  auto q = values(static_cast<size_t>(T * hs), 1), k = values(static_cast<size_t>(T * hs), 2),
       v = values(static_cast<size_t>(T * hs), 3);
  auto dout = values(static_cast<size_t>(T * hs), 4), p = values(static_cast<size_t>(T * T), 5);
  std::vector<F> dq(static_cast<size_t>(T * hs)), dk(static_cast<size_t>(T * hs)),
      dv(static_cast<size_t>(T * hs));
  const double scale = 1.0 / std::sqrt(double(hs));
  return count([&] {
    for (int bh = 0; bh < B * NH; ++bh)
      for (int t = 0; t < T; ++t) {
        const int n = causal ? t + 1 : T;
        std::vector<F> dp(static_cast<size_t>(n));
        for (int u = 0; u < n; ++u) {
          F acc{0};
          for (int d = 0; d < hs; ++d) acc = acc + dout[t * hs + d] * v[u * hs + d];
          dp[u] = acc;
          for (int d = 0; d < hs; ++d)
            dv[u * hs + d] = dv[u * hs + d] + p[t * T + u] * dout[t * hs + d];
        }
        F dot{0};
        for (int u = 0; u < n; ++u) dot = dot + p[t * T + u] * dp[u];
        for (int u = 0; u < n; ++u) {
          F ds = p[t * T + u] * (dp[u] - dot);
          ds = ds * scale;
          for (int d = 0; d < hs; ++d) {
            dq[t * hs + d] = dq[t * hs + d] + ds * k[u * hs + d];
            dk[u * hs + d] = dk[u * hs + d] + ds * q[t * hs + d];
          }
        }
      }
  });
}

uint64_t naive_layernorm_forward(int N, int C) {
  auto x = values(static_cast<size_t>(N * C), 1), w = values(static_cast<size_t>(C), 2),
       b = values(static_cast<size_t>(C), 3);
  std::vector<F> y(static_cast<size_t>(N * C));
  return count([&] {
    for (int r = 0; r < N; ++r) {
      const F* xr = &x[static_cast<size_t>(r * C)];
      F sum{0};
      for (int i = 0; i < C; ++i) sum = sum + xr[i];
      const double mean = sum.v / C;  // per row: not counted
      F var{0};
      for (int i = 0; i < C; ++i) {
        F d = xr[i] - mean;
        var = var + d * d;
      }
      const double rstd = 1.0 / std::sqrt(var.v / C + 1e-5);
      for (int i = 0; i < C; ++i) {
        F norm = (xr[i] - mean) * rstd;
        y[r * C + i] = norm * w[i] + b[i];
      }
    }
  });
}

uint64_t naive_layernorm_backward(int N, int C) {
  auto x = values(static_cast<size_t>(N * C), 1), w = values(static_cast<size_t>(C), 2),
       dy = values(static_cast<size_t>(N * C), 3);
  std::vector<F> dx(static_cast<size_t>(N * C)), dw(static_cast<size_t>(C)),
      db(static_cast<size_t>(C)), norm(static_cast<size_t>(C)), dn(static_cast<size_t>(C));
  return count([&] {
    for (int r = 0; r < N; ++r) {
      const double mean = 0.1, rstd = 1.3;  // saved by the forward
      F s1{0}, s2{0};
      for (int i = 0; i < C; ++i) {
        norm[i] = (x[r * C + i] - mean) * rstd;
        dn[i] = w[i] * dy[r * C + i];
        s1 = s1 + dn[i];
        s2 = s2 + dn[i] * norm[i];
      }
      const double m1 = s1.v / C, m2 = s2.v / C;
      for (int i = 0; i < C; ++i) {
        db[i] = db[i] + dy[r * C + i];
        dw[i] = dw[i] + norm[i] * dy[r * C + i];
        dx[r * C + i] = (dn[i] - m1 - norm[i] * m2) * rstd;
      }
    }
  });
}

constexpr double kGeluC = 0.044715;
const double kGeluK = std::sqrt(2.0 / M_PI);

uint64_t naive_gelu_forward(int n) {
  auto x = values(static_cast<size_t>(n), 1);
  std::vector<F> y(static_cast<size_t>(n));
  return count([&] {
    for (int i = 0; i < n; ++i) {
      F cube = x[i] * x[i] * x[i];
      F t = ctanh(kGeluK * (x[i] + kGeluC * cube));
      y[i] = (0.5 * x[i]) * (1.0 + t);
    }
  });
}

uint64_t naive_gelu_backward(int n) {
  auto x = values(static_cast<size_t>(n), 1), dy = values(static_cast<size_t>(n), 2);
  std::vector<F> dx(static_cast<size_t>(n));
  return count([&] {
    for (int i = 0; i < n; ++i) {
      F cube = x[i] * x[i] * x[i];
      F t = ctanh(kGeluK * (x[i] + kGeluC * cube));
      F sech2 = 1.0 - t * t;
      F dinner = kGeluK * (1.0 + (3.0 * kGeluC) * (x[i] * x[i]));
      F local = 0.5 * (1.0 + t) + (0.5 * x[i]) * sech2 * dinner;
      dx[i] = local * dy[i];
    }
  });
}

uint64_t naive_residual_forward(int n) {
  auto a = values(static_cast<size_t>(n), 1), b = values(static_cast<size_t>(n), 2);
  std::vector<F> y(static_cast<size_t>(n));
  return count([&] {
    for (int i = 0; i < n; ++i) y[i] = a[i] + b[i];
  });
}

uint64_t naive_cross_entropy_forward(int N, int V) {
  auto logits = values(static_cast<size_t>(N * V), 1);
  std::vector<F> probs(static_cast<size_t>(N * V)), loss(static_cast<size_t>(N));
  return count([&] {
    for (int r = 0; r < N; ++r) {
      F mx{-std::numeric_limits<double>::infinity()};
      for (int i = 0; i < V; ++i) mx = cmax(mx, logits[r * V + i]);
      F sum{0};
      for (int i = 0; i < V; ++i) {
        probs[r * V + i] = cexp(logits[r * V + i] - mx);
        sum = sum + probs[r * V + i];
      }
      for (int i = 0; i < V; ++i) probs[r * V + i] = probs[r * V + i] / sum;
      loss[r] = -clog(probs[r * V + (r % V)]);
    }
  });
}

uint64_t naive_cross_entropy_backward(int N, int V) {
  auto probs = values(static_cast<size_t>(N * V), 1);
  std::vector<F> dlogits(static_cast<size_t>(N * V));
  const double dloss = 1.0 / N;
  return count([&] {
    for (int r = 0; r < N; ++r)
      for (int i = 0; i < V; ++i)
        dlogits[r * V + i] = (probs[r * V + i] - (i == r % V ? 1.0 : 0.0)) * dloss;
  });
}

uint64_t naive_adamw(int n) {
  auto p = values(static_cast<size_t>(n), 1), g = values(static_cast<size_t>(n), 2),
       m = values(static_cast<size_t>(n), 3), v = values(static_cast<size_t>(n), 4);
  const double b1 = 0.9, b2 = 0.999, lr = 3e-4, wd = 0.1, eps = 1e-8;
  const double bc1 = 1 - std::pow(b1, 3), bc2 = 1 - std::pow(b2, 3);  // per step, not per param
  return count([&] {
    for (int i = 0; i < n; ++i) {
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * (g[i] * g[i]);
      F mh = m[i] / bc1, vh = v[i] / bc2;
      F u = mh / (csqrt(vh) + eps);
      u = u + wd * p[i];
      p[i] = p[i] - lr * u;
    }
  });
}

TEST(Flops, MatmulIsTwoMKN) {
  // 2·M·K·N by hand: 2·4·8·16 = 1024, plus M·N = 64 for the bias.
  EXPECT_EQ(matmul_forward(4, 8, 16, false), 1024u);
  EXPECT_EQ(matmul_forward(4, 8, 16, true), 1088u);
  EXPECT_EQ(matmul_forward(3, 5, 7, true), naive_matmul_forward(3, 5, 7, true));
  EXPECT_EQ(matmul_forward(3, 5, 7, false), naive_matmul_forward(3, 5, 7, false));
}

TEST(Flops, MatmulBackwardIsDinpPlusDweightPlusDbias) {
  EXPECT_EQ(matmul_backward(4, 8, 16, false), 2 * matmul_forward(4, 8, 16, false));
  EXPECT_EQ(matmul_backward(4, 8, 16, true, false), 1024u + 64u);
  for (bool bias : {false, true})
    for (bool dinp : {false, true})
      EXPECT_EQ(matmul_backward(3, 5, 7, bias, dinp), naive_matmul_backward(3, 5, 7, bias, dinp))
          << "bias " << bias << " need_dinp " << dinp;
}

TEST(Flops, AttentionMatchesNaiveCount) {
  // B=1, T=4, C=8, NH=2 by hand: hs = 4, 16 score entries per head (10 causal),
  // 4·hs + 6 = 22 FLOPs per entry forward, 8·hs + 5 = 37 backward.
  EXPECT_EQ(attention_forward(1, 4, 8, 2, false), 2u * 16 * 22);
  EXPECT_EQ(attention_forward(1, 4, 8, 2, true), 2u * 10 * 22);
  EXPECT_EQ(attention_backward(1, 4, 8, 2, false), 2u * 16 * 37);
  for (bool causal : {false, true}) {
    EXPECT_EQ(attention_forward(2, 5, 12, 3, causal), naive_attention_forward(2, 5, 12, 3, causal));
    EXPECT_EQ(attention_backward(2, 5, 12, 3, causal),
              naive_attention_backward(2, 5, 12, 3, causal));
  }
}

TEST(Flops, CausalDiscountIsTPlusOneOverTwoT) {
  // causal = full · (T+1)/(2T), exactly: causal · 2T == full · (T+1).
  for (int64_t T : {1, 2, 7, 64, 1024}) {
    const uint64_t full_f = attention_forward(2, T, 128, 4, false);
    const uint64_t causal_f = attention_forward(2, T, 128, 4, true);
    EXPECT_EQ(causal_f * uint64_t(2 * T), full_f * uint64_t(T + 1)) << "T=" << T;
    const uint64_t full_b = attention_backward(2, T, 128, 4, false);
    const uint64_t causal_b = attention_backward(2, T, 128, 4, true);
    EXPECT_EQ(causal_b * uint64_t(2 * T), full_b * uint64_t(T + 1)) << "T=" << T;
  }
}

TEST(Flops, ElementwiseOpsMatchNaiveCount) {
  EXPECT_EQ(layernorm_forward(3, 5), naive_layernorm_forward(3, 5));
  EXPECT_EQ(layernorm_forward(3, 5), 8u * 15);
  EXPECT_EQ(layernorm_backward(3, 5), naive_layernorm_backward(3, 5));
  EXPECT_EQ(gelu_forward(11), naive_gelu_forward(11));
  EXPECT_EQ(gelu_backward(11), naive_gelu_backward(11));
  EXPECT_EQ(residual_forward(13), naive_residual_forward(13));
  EXPECT_EQ(residual_forward(13), 13u);
  EXPECT_EQ(cross_entropy_forward(4, 10), naive_cross_entropy_forward(4, 10));
  EXPECT_EQ(cross_entropy_forward(2, 10), 5u * 20 + 2 * 2);
  EXPECT_EQ(cross_entropy_backward(4, 10), naive_cross_entropy_backward(4, 10));
  EXPECT_EQ(adamw(7), naive_adamw(7));
}

TEST(Flops, ClosedFormHandEvaluated) {
  // 6·1e6·128 + 6·2·64·32·128 = 768,000,000 + 3,145,728.
  EXPECT_DOUBLE_EQ(decoder_step_closed_form(1e6, 2, 64, 32, 128, true), 771145728.0);
  // 6·1e6·128 + 12·2·64·32·128 = 768,000,000 + 6,291,456.
  EXPECT_DOUBLE_EQ(decoder_step_closed_form(1e6, 2, 64, 32, 128, false), 774291456.0);
}

// GPT-2 124M, one sequence: the per-op sum (forward + backward) against the closed
// form. The per-op count is larger by the elementwise ops, biases, softmax and the
// (T+1)/T of the exact causal count; for this size that is below 1% (≈ 0.35%).
double gpt2_per_op(int64_t L, int64_t C, int64_t NH, int64_t V, int64_t B, int64_t T, bool causal) {
  const int64_t BT = B * T;
  double f = 0;
  auto linear = [&](int64_t K, int64_t N, bool bias) {
    f += double(matmul_forward(BT, K, N, bias)) + double(matmul_backward(BT, K, N, bias, true));
  };
  for (int64_t l = 0; l < L; ++l) {
    f += double(layernorm_forward(BT, C) + layernorm_backward(BT, C)) * 2;
    linear(C, 3 * C, true);
    f += double(attention_forward(B, T, C, NH, causal) + attention_backward(B, T, C, NH, causal));
    linear(C, C, true);
    f += double(residual_forward(BT * C)) * 2;
    linear(C, 4 * C, true);
    f += double(gelu_forward(BT * 4 * C) + gelu_backward(BT * 4 * C));
    linear(4 * C, C, true);
  }
  f += double(layernorm_forward(BT, C) + layernorm_backward(BT, C));
  linear(C, V, false);  // lm_head (tied with the token embedding)
  f += double(cross_entropy_forward(BT, V) + cross_entropy_backward(BT, V));
  return f;
}

TEST(Flops, PerOpSumAgreesWithClosedFormForGpt2) {
  const int64_t L = 12, C = 768, NH = 12, V = 50257, B = 1, T = 1024;
  const double matmul_params = double(12 * L * C * C + V * C);
  for (bool causal : {true, false}) {
    const double per_op = gpt2_per_op(L, C, NH, V, B, T, causal);
    const double closed = decoder_step_closed_form(matmul_params, L, C, T, double(B * T), causal);
    EXPECT_GT(per_op, closed) << "causal " << causal;
    EXPECT_LT((per_op - closed) / closed, 0.01) << "causal " << causal;  // tolerance: 1%
  }
}

}  // namespace
}  // namespace hybrid::profiler::flops
