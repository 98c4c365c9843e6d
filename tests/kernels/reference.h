// Test helpers for the kernel suites: naive double-precision reference ops
// (straight loops, no tricks: the oracle the backends are checked against),
// finite differences, dtype buffers and the error metric.
//
// Error metric everywhere: rel_err(got, ref) = max_i |got_i − ref_i| / max_i |ref_i|,
// the max error normalised by the tensor's scale (robust where ref_i ≈ 0).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "kernels/dtype.h"
#include "kernels/ops.h"

namespace hybrid::kernels::test {

// The tolerances most kernel tests share: an fp32 kernel against the double
// reference, and the double backward against central differences (h = 1e-5) of
// the double forward.
constexpr double kTolF32 = 1e-5;
constexpr double kTolFd = 1e-4;

using Vec = std::vector<double>;

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

inline std::vector<int32_t> random_ints(size_t n, int32_t bound, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> dist(0, bound - 1);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

inline Vec to_double(const std::vector<float>& v) { return Vec(v.begin(), v.end()); }

template <class A, class B>
double rel_err(const A& got, const B& ref) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num = std::max(num, std::abs(double(got[i]) - double(ref[i])));
    den = std::max(den, std::abs(double(ref[i])));
  }
  return num / std::max(den, 1e-30);
}

// A buffer of n elements stored in dt.
class Buf {
 public:
  Buf(DType dt, size_t n) : dt_(dt), n_(n), bytes_(n * dtype_size(dt) + 64, 0) {}
  Buf(DType dt, const std::vector<float>& v) : Buf(dt, v.size()) { set(v); }
  void set(const std::vector<float>& v) {
    dispatch_dtype(dt_, [&](auto tag) {
      using T = decltype(tag);
      T* p = static_cast<T*>(data());
      for (size_t i = 0; i < n_; ++i) p[i] = store<T>(v[i]);
    });
  }
  std::vector<float> get() const {
    std::vector<float> v(n_);
    dispatch_dtype(dt_, [&](auto tag) {
      using T = decltype(tag);
      const T* p = static_cast<const T*>(data());
      for (size_t i = 0; i < n_; ++i) v[i] = load(p[i]);
    });
    return v;
  }
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  size_t size() const { return n_; }

 private:
  DType dt_;
  size_t n_;
  std::vector<unsigned char> bytes_;
};

// v rounded through dt and back (the values a dt tensor actually holds).
inline std::vector<float> round_to(DType dt, const std::vector<float>& v) {
  return Buf(dt, v).get();
}

// ∂L/∂x_i by central differences, for each i in idx (all when idx is empty).
inline Vec finite_diff(Vec& x, const std::function<double()>& loss, double h = 1e-5,
                       std::vector<size_t> idx = {}) {
  if (idx.empty())
    for (size_t i = 0; i < x.size(); ++i) idx.push_back(i);
  Vec g(idx.size());
  for (size_t j = 0; j < idx.size(); ++j) {
    const size_t i = idx[j];
    const double keep = x[i];
    x[i] = keep + h;
    const double lp = loss();
    x[i] = keep - h;
    const double lm = loss();
    x[i] = keep;
    g[j] = (lp - lm) / (2 * h);
  }
  return g;
}

inline double dot(const Vec& a, const Vec& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// ---- naive reference ops (double) ---------------------------------------------

inline void gemm_ref(bool ta, bool tb, int M, int N, int K, double alpha, const Vec& A, int lda,
                     const Vec& B, int ldb, double beta, Vec& C, int ldc) {
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = 0.0;
      for (int k = 0; k < K; ++k)
        s += (ta ? A[size_t(k) * lda + i] : A[size_t(i) * lda + k]) *
             (tb ? B[size_t(j) * ldb + k] : B[size_t(k) * ldb + j]);
      double& c = C[size_t(i) * ldc + j];
      c = alpha * s + (beta == 0.0 ? 0.0 : beta * c);
    }
}

inline Vec matmul_fwd_ref(const Vec& inp, const Vec& w, const Vec* bias, int M, int K, int N) {
  Vec out(size_t(M) * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = bias ? (*bias)[j] : 0.0;
      for (int k = 0; k < K; ++k) s += inp[size_t(i) * K + k] * w[size_t(j) * K + k];
      out[size_t(i) * N + j] = s;
    }
  return out;
}

inline void matmul_bwd_ref(Vec& dinp, Vec& dw, Vec& db, const Vec& dout, const Vec& inp,
                           const Vec& w, int M, int K, int N) {
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      const double g = dout[size_t(i) * N + j];
      db[j] += g;
      for (int k = 0; k < K; ++k) {
        dinp[size_t(i) * K + k] += g * w[size_t(j) * K + k];
        dw[size_t(j) * K + k] += g * inp[size_t(i) * K + k];
      }
    }
}

// Token (b, t) takes wpe row pos[b·T + t] when pos is given (packed documents,
// generation), else row t.
inline Vec encoder_fwd_ref(const std::vector<int32_t>& tok, const Vec& wte, const Vec& wpe, int B,
                           int T, int C, const int32_t* pos = nullptr) {
  Vec out(size_t(B) * T * C);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const size_t bt = size_t(b) * T + t, p = pos ? size_t(pos[bt]) : size_t(t);
      for (int c = 0; c < C; ++c) out[bt * C + c] = wte[size_t(tok[bt]) * C + c] + wpe[p * C + c];
    }
  return out;
}

inline void encoder_bwd_ref(Vec& dwte, Vec& dwpe, const Vec& dout, const std::vector<int32_t>& tok,
                            int B, int T, int C, const int32_t* pos = nullptr) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const size_t bt = size_t(b) * T + t, p = pos ? size_t(pos[bt]) : size_t(t);
      for (int c = 0; c < C; ++c) {
        const double g = dout[bt * C + c];
        dwte[size_t(tok[bt]) * C + c] += g;
        dwpe[p * C + c] += g;
      }
    }
}

inline Vec layernorm_fwd_ref(const Vec& x, const Vec& w, const Vec& b, int N, int C,
                             Vec* mean = nullptr, Vec* rstd = nullptr) {
  Vec out(x.size());
  for (int i = 0; i < N; ++i) {
    double m = 0.0, v = 0.0;
    for (int c = 0; c < C; ++c) m += x[size_t(i) * C + c];
    m /= C;
    for (int c = 0; c < C; ++c) v += (x[size_t(i) * C + c] - m) * (x[size_t(i) * C + c] - m);
    v /= C;
    const double s = 1.0 / std::sqrt(v + 1e-5);
    for (int c = 0; c < C; ++c)
      out[size_t(i) * C + c] = (x[size_t(i) * C + c] - m) * s * w[c] + b[c];
    if (mean) (*mean)[i] = m;
    if (rstd) (*rstd)[i] = s;
  }
  return out;
}

// Textbook LayerNorm backward: dx = rstd·(dn − mean(dn) − n·mean(dn·n)), dn = dout·w.
inline void layernorm_bwd_ref(Vec& dx, Vec& dw, Vec& db, const Vec& dout, const Vec& x,
                              const Vec& w, int N, int C) {
  Vec mean(N), rstd(N);
  layernorm_fwd_ref(x, w, Vec(C, 0.0), N, C, &mean, &rstd);
  for (int i = 0; i < N; ++i) {
    double a = 0.0, bsum = 0.0;
    for (int c = 0; c < C; ++c) {
      const double n = (x[size_t(i) * C + c] - mean[i]) * rstd[i];
      const double dn = dout[size_t(i) * C + c] * w[c];
      a += dn;
      bsum += dn * n;
      dw[c] += dout[size_t(i) * C + c] * n;
      db[c] += dout[size_t(i) * C + c];
    }
    a /= C;
    bsum /= C;
    for (int c = 0; c < C; ++c) {
      const double n = (x[size_t(i) * C + c] - mean[i]) * rstd[i];
      dx[size_t(i) * C + c] += rstd[i] * (dout[size_t(i) * C + c] * w[c] - a - n * bsum);
    }
  }
}

inline double gelu_ref(double x) {
  const double s = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(s * (x + 0.044715 * x * x * x)));
}
inline double gelu_grad_ref(double x) {
  const double s = std::sqrt(2.0 / M_PI);
  const double u = s * (x + 0.044715 * x * x * x);
  const double t = std::tanh(u);
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * s * (1.0 + 3.0 * 0.044715 * x * x);
}

// Causal self-attention: out [B,T,C] from qkv [B,T,3C]; P [B,NH,T,T] and the
// logsumexp of each score row, lse [B,NH,T], when asked.
inline Vec attention_fwd_ref(const Vec& qkv, int B, int T, int C, int NH, Vec* P = nullptr,
                             Vec* lse = nullptr) {
  const int hs = C / NH;
  const double scale = 1.0 / std::sqrt(double(hs));
  Vec out(size_t(B) * T * C, 0.0);
  if (P) P->assign(size_t(B) * NH * T * T, 0.0);
  if (lse) lse->assign(size_t(B) * NH * T, 0.0);
  auto at = [&](int b, int t, int part, int h, int c) {
    return qkv[(size_t(b) * T + t) * 3 * C + size_t(part) * C + size_t(h) * hs + c];
  };
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        Vec s(t + 1);
        double mx = -1e300;
        for (int j = 0; j <= t; ++j) {
          double d = 0.0;
          for (int c = 0; c < hs; ++c) d += at(b, t, 0, h, c) * at(b, j, 1, h, c);
          s[j] = d * scale;
          mx = std::max(mx, s[j]);
        }
        double sum = 0.0;
        for (int j = 0; j <= t; ++j) sum += (s[j] = std::exp(s[j] - mx));
        if (lse) (*lse)[(size_t(b) * NH + h) * T + t] = mx + std::log(sum);
        for (int j = 0; j <= t; ++j) {
          s[j] /= sum;
          if (P) (*P)[((size_t(b) * NH + h) * T + t) * T + j] = s[j];
          for (int c = 0; c < hs; ++c)
            out[(size_t(b) * T + t) * C + size_t(h) * hs + c] += s[j] * at(b, j, 2, h, c);
        }
      }
  return out;
}

// Attention backward straight from the chain rule, loops only.
inline void attention_bwd_ref(Vec& dqkv, const Vec& dout, const Vec& qkv, int B, int T, int C,
                              int NH) {
  const int hs = C / NH;
  const double scale = 1.0 / std::sqrt(double(hs));
  Vec P;
  attention_fwd_ref(qkv, B, T, C, NH, &P);
  auto idx = [&](int b, int t, int part, int h, int c) {
    return (size_t(b) * T + t) * 3 * C + size_t(part) * C + size_t(h) * hs + c;
  };
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        const double* p = &P[((size_t(b) * NH + h) * T + t) * T];
        const double* g = &dout[(size_t(b) * T + t) * C + size_t(h) * hs];
        Vec dp(t + 1, 0.0);
        for (int j = 0; j <= t; ++j)
          for (int c = 0; c < hs; ++c) {
            dp[j] += g[c] * qkv[idx(b, j, 2, h, c)];
            dqkv[idx(b, j, 2, h, c)] += p[j] * g[c];
          }
        double dot_pdp = 0.0;
        for (int j = 0; j <= t; ++j) dot_pdp += p[j] * dp[j];
        for (int j = 0; j <= t; ++j) {
          const double ds = p[j] * (dp[j] - dot_pdp) * scale;
          for (int c = 0; c < hs; ++c) {
            dqkv[idx(b, t, 0, h, c)] += ds * qkv[idx(b, j, 1, h, c)];
            dqkv[idx(b, j, 1, h, c)] += ds * qkv[idx(b, t, 0, h, c)];
          }
        }
      }
}

// Attention over packed qkv rows [B, T, NH·hs + 2·NKV·hs] (query heads, then the
// key and the value heads; query head h reads key/value head h / (NH / NKV)), with
// each query t seeing keys t − pos[b·T + t] .. t of its row (packed documents;
// pos empty: keys 0 .. t). out [B, T, NH·hs]; lse [B, NH, T] and the
// probabilities P [B, NH, T, T] when asked.
struct MaskedAttention {
  int B, T, NH, NKV, hs;
  const std::vector<int32_t>& pos;
  int C() const { return NH * hs; }
  size_t ld() const { return size_t(C()) + 2 * size_t(NKV) * hs; }
  int first(int b, int t) const { return pos.empty() ? 0 : t - pos[size_t(b) * T + t]; }
  // Index into qkv of channel c of query head h (part 0), or of the key (1) or
  // value (2) head that query head h reads.
  size_t at(int b, int t, int part, int h, int c) const {
    const size_t g = size_t(h / (NH / NKV));
    const size_t off =
        part == 0 ? size_t(h) * hs : size_t(C()) + (part - 1) * size_t(NKV) * hs + g * hs;
    return (size_t(b) * T + t) * ld() + off + size_t(c);
  }
};

inline Vec masked_attention_fwd_ref(const MaskedAttention& a, const Vec& qkv, Vec* lse = nullptr,
                                    Vec* P = nullptr) {
  const double scale = 1.0 / std::sqrt(double(a.hs));
  Vec out(size_t(a.B) * a.T * a.C(), 0.0);
  if (lse) lse->assign(size_t(a.B) * a.NH * a.T, 0.0);
  if (P) P->assign(size_t(a.B) * a.NH * a.T * a.T, 0.0);
  for (int b = 0; b < a.B; ++b)
    for (int h = 0; h < a.NH; ++h)
      for (int t = 0; t < a.T; ++t) {
        const int j0 = a.first(b, t);
        Vec s(size_t(t) + 1, 0.0);
        double mx = -1e300, sum = 0.0;
        for (int j = j0; j <= t; ++j) {
          for (int c = 0; c < a.hs; ++c)
            s[j] += qkv[a.at(b, t, 0, h, c)] * qkv[a.at(b, j, 1, h, c)];
          s[j] *= scale;
          mx = std::max(mx, s[j]);
        }
        for (int j = j0; j <= t; ++j) sum += (s[j] = std::exp(s[j] - mx));
        const size_t row = (size_t(b) * a.NH + h) * a.T + t;
        if (lse) (*lse)[row] = mx + std::log(sum);
        for (int j = j0; j <= t; ++j) {
          s[j] /= sum;
          if (P) (*P)[row * a.T + j] = s[j];
          for (int c = 0; c < a.hs; ++c)
            out[(size_t(b) * a.T + t) * a.C() + size_t(h) * a.hs + c] +=
                s[j] * qkv[a.at(b, j, 2, h, c)];
        }
      }
  return out;
}

// Its backward from the chain rule, added (+=) into dqkv.
inline void masked_attention_bwd_ref(const MaskedAttention& a, Vec& dqkv, const Vec& dout,
                                     const Vec& qkv) {
  const double scale = 1.0 / std::sqrt(double(a.hs));
  Vec P;
  masked_attention_fwd_ref(a, qkv, nullptr, &P);
  for (int b = 0; b < a.B; ++b)
    for (int h = 0; h < a.NH; ++h)
      for (int t = 0; t < a.T; ++t) {
        const int j0 = a.first(b, t);
        const double* p = &P[((size_t(b) * a.NH + h) * a.T + t) * a.T];
        const double* g = &dout[(size_t(b) * a.T + t) * a.C() + size_t(h) * a.hs];
        Vec dp(size_t(t) + 1, 0.0);
        double dot_pdp = 0.0;
        for (int j = j0; j <= t; ++j) {
          for (int c = 0; c < a.hs; ++c) {
            dp[j] += g[c] * qkv[a.at(b, j, 2, h, c)];
            dqkv[a.at(b, j, 2, h, c)] += p[j] * g[c];
          }
          dot_pdp += p[j] * dp[j];
        }
        for (int j = j0; j <= t; ++j) {
          const double ds = p[j] * (dp[j] - dot_pdp) * scale;
          for (int c = 0; c < a.hs; ++c) {
            dqkv[a.at(b, t, 0, h, c)] += ds * qkv[a.at(b, j, 1, h, c)];
            dqkv[a.at(b, j, 1, h, c)] += ds * qkv[a.at(b, t, 0, h, c)];
          }
        }
      }
}

inline void cross_entropy_ref(const Vec& logits, const std::vector<int32_t>& targets, int N, int V,
                              int Vp, Vec& losses, Vec& lse) {
  losses.assign(N, 0.0);
  lse.assign(N, 0.0);
  for (int i = 0; i < N; ++i) {
    const double* r = &logits[size_t(i) * Vp];
    double mx = -1e300, s = 0.0;
    for (int j = 0; j < V; ++j) mx = std::max(mx, r[j]);
    for (int j = 0; j < V; ++j) s += std::exp(r[j] - mx);
    lse[i] = mx + std::log(s);
    losses[i] = targets[i] < 0 ? 0.0 : lse[i] - r[targets[i]];  // negative: no target
  }
}

}  // namespace hybrid::kernels::test
