// FLOP formulas of the ops, as the kernels compute them. Convention (docs/profiler.md):
// every arithmetic operation on one element counts 1 FLOP — add, sub, mul, div, max,
// exp, log, tanh, sqrt alike — and a multiply-add counts 2. Per-row scalar work
// (a row's 1/C, rsqrt, log of one target) is counted where the formula says so and
// otherwise ignored. Each per-element constant below is the sum of its listed parts.
#include "profiler/flops.h"

namespace hybrid::profiler::flops {

namespace {

using u64 = uint64_t;

// Score entries one head computes: T² for full attention, T(T+1)/2 under the mask.
u64 score_entries(int64_t T, bool causal) {
  return causal ? u64(T) * u64(T + 1) / 2 : u64(T) * u64(T);
}

// Attention, per score entry beyond the two matmuls.
constexpr u64 kAttnFwdPerEntry = 1 /*scale*/ + 5 /*softmax: max, sub, exp, sum, div*/;
constexpr u64 kAttnBwdPerEntry = 4 /*softmax: P·dP, row sum, sub, ·P*/ + 1 /*scale*/;

// LayerNorm per element: mean 1 (add), variance 3 (sub, mul, add), normalize 2
// (sub, mul by rstd), affine 2 (mul, add).
constexpr u64 kLayerNormFwd = 1 + 3 + 2 + 2;
// Backward per element: recompute norm 2, dnorm = w·dout 1, the two row means
// Σdnorm 1 and Σdnorm·norm 2, dbias 1, dweight 2 (mul, add), dinp 4 (sub, mul, sub, mul).
constexpr u64 kLayerNormBwd = 2 + 1 + 1 + 2 + 1 + 2 + 4;

// GELU (tanh form) 0.5·x·(1 + tanh(k·(x + 0.044715·x³))): x³ 2, ·0.044715 1, +x 1, ·k 1,
// tanh 1, +1 1, ·x 1, ·0.5 1.
constexpr u64 kGeluFwd = 2 + 1 + 1 + 1 + 1 + 1 + 1 + 1;
// Backward: recompute tanh argument and tanh 6, sech² = 1 − t² 2, inner derivative
// k·(1 + 3·0.044715·x²) 4, 0.5·(1+t) + 0.5·x·sech²·inner 6, · dout 1.
constexpr u64 kGeluBwd = 6 + 2 + 4 + 6 + 1;

// RMSNorm per element: x² and sum 2, ·rstd 1, ·weight 1.
constexpr u64 kRmsNormFwd = 2 + 1 + 1;
// Backward per element: x̂ = x·rstd 1, g = dout·w 1, Σg·x̂ 2, dinp rstd·(g − x̂·m)
// 3, dweight (mul, add) 2.
constexpr u64 kRmsNormBwd = 1 + 1 + 2 + 3 + 2;

// Rotary embedding per element: x·cos + partner·sin (cos and sin are per
// position and channel pair, computed once a row).
constexpr u64 kRope = 3;

// SwiGLU per output: σ(g) 4 (neg, exp, add, div), g·σ 1, ·up 1.
constexpr u64 kSwiGluFwd = 4 + 1 + 1;
// Backward per output: σ 4, 1 − s 1, g·(1 − s) 1, +1 1, dout·up·s·(…) 3, dgate
// add 1, dup = dout·g·s 2 and its add 1.
constexpr u64 kSwiGluBwd = 4 + 1 + 1 + 1 + 3 + 1 + 2 + 1;

// Cross-entropy per logit: softmax max, sub, exp, sum, div; per row: log and negate.
constexpr u64 kXentFwdPerLogit = 5;
constexpr u64 kXentFwdPerRow = 2;
// Backward per logit: (p − onehot) · dloss.
constexpr u64 kXentBwdPerLogit = 2;

// AdamW per parameter: m 3 (mul, mul, add), v 4 (square, mul, mul, add), bias
// corrections 2 (div, div), m̂/(√v̂ + ε) 3, weight decay 2 (mul, add), p −= lr·u 2.
constexpr u64 kAdamW = 3 + 4 + 2 + 3 + 2 + 2;

}  // namespace

uint64_t matmul_forward(int64_t M, int64_t K, int64_t N, bool bias) {
  return 2 * u64(M) * u64(K) * u64(N) + (bias ? u64(M) * u64(N) : 0);
}

uint64_t matmul_backward(int64_t M, int64_t K, int64_t N, bool bias, bool need_dinp) {
  const u64 gemm = 2 * u64(M) * u64(K) * u64(N);
  return (need_dinp ? gemm : 0) + gemm + (bias ? u64(M) * u64(N) : 0);
}

uint64_t attention_forward(int64_t B, int64_t T, int64_t C, int64_t NH, bool causal) {
  const u64 hs = u64(C / NH);
  const u64 entries = score_entries(T, causal);
  // Per entry: QKᵀ 2·hs, then ·V 2·hs, plus scale and softmax.
  return u64(B) * u64(NH) * entries * (4 * hs + kAttnFwdPerEntry);
}

uint64_t attention_backward(int64_t B, int64_t T, int64_t C, int64_t NH, bool causal) {
  const u64 hs = u64(C / NH);
  const u64 entries = score_entries(T, causal);
  // Per entry: dP = dO·Vᵀ and dV = Pᵀ·dO (2·hs each), dQ = dS·K and dK = dSᵀ·Q (2·hs each).
  return u64(B) * u64(NH) * entries * (8 * hs + kAttnBwdPerEntry);
}

uint64_t layernorm_forward(int64_t N, int64_t C) { return kLayerNormFwd * u64(N) * u64(C); }
uint64_t layernorm_backward(int64_t N, int64_t C) { return kLayerNormBwd * u64(N) * u64(C); }
uint64_t gelu_forward(int64_t n) { return kGeluFwd * u64(n); }
uint64_t gelu_backward(int64_t n) { return kGeluBwd * u64(n); }
uint64_t residual_forward(int64_t n) { return u64(n); }
uint64_t rmsnorm_forward(int64_t N, int64_t C) { return kRmsNormFwd * u64(N) * u64(C); }
uint64_t rmsnorm_backward(int64_t N, int64_t C) { return kRmsNormBwd * u64(N) * u64(C); }
uint64_t rope(int64_t n) { return kRope * u64(n); }
uint64_t swiglu_forward(int64_t n) { return kSwiGluFwd * u64(n); }
uint64_t swiglu_backward(int64_t n) { return kSwiGluBwd * u64(n); }

uint64_t cross_entropy_forward(int64_t N, int64_t V) {
  return kXentFwdPerLogit * u64(N) * u64(V) + kXentFwdPerRow * u64(N);
}

uint64_t cross_entropy_backward(int64_t N, int64_t V) { return kXentBwdPerLogit * u64(N) * u64(V); }

uint64_t adamw(int64_t n) { return kAdamW * u64(n); }

double decoder_step_closed_form(double matmul_params, int64_t n_layer, int64_t n_embd,
                                int64_t seq_len, double tokens, bool causal) {
  // Forward 2 FLOPs per parameter per token, backward 4; attention's QKᵀ and ·V add
  // 4·C·T per token per layer forward (×3 with backward), half of it under the mask.
  const double attention =
      (causal ? 6.0 : 12.0) * double(n_layer) * double(n_embd) * double(seq_len) * tokens;
  return 6.0 * matmul_params * tokens + attention;
}

}  // namespace hybrid::profiler::flops
