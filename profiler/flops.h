// Per-op FLOP formulas: the FLOPs profiler attaches these to the scopes of the
// ops that really ran (forward and backward separately), so nothing is assumed
// (unlike "backward = 2 × forward"). One multiply-add = 2 FLOPs = 1 MAC.
// Conventions are documented in docs/profiler.md; each has a unit test.
#pragma once

#include <cstdint>

namespace hybrid::profiler::flops {

// Linear layer out[M,N] = in[M,K]·W[N,K]ᵀ (+ bias): 2MKN (+ MN with bias).
uint64_t matmul_forward(int64_t M, int64_t K, int64_t N, bool bias);
// dinp (2MKN) + dweight (2MKN) + dbias (MN with bias).
uint64_t matmul_backward(int64_t M, int64_t K, int64_t N, bool bias, bool need_dinp = true);

// Causal self-attention core (QKᵀ, softmax, ·V) for B×NH heads of size hs = C/NH.
// causal = true counts only the T(T+1)/2 unmasked score entries (the "causal
// discount"); false counts the full T² as most tools do.
uint64_t attention_forward(int64_t B, int64_t T, int64_t C, int64_t NH, bool causal);
uint64_t attention_backward(int64_t B, int64_t T, int64_t C, int64_t NH, bool causal);

uint64_t layernorm_forward(int64_t N, int64_t C);
uint64_t layernorm_backward(int64_t N, int64_t C);
uint64_t gelu_forward(int64_t n);
uint64_t gelu_backward(int64_t n);
uint64_t residual_forward(int64_t n);
uint64_t rmsnorm_forward(int64_t N, int64_t C);
uint64_t rmsnorm_backward(int64_t N, int64_t C);
// Rotary embedding of n elements (the rotated heads' channels), either way.
uint64_t rope(int64_t n);
// SwiGLU over n outputs (n gate and n up inputs).
uint64_t swiglu_forward(int64_t n);
uint64_t swiglu_backward(int64_t n);
uint64_t cross_entropy_forward(int64_t N, int64_t V);
uint64_t cross_entropy_backward(int64_t N, int64_t V);
uint64_t adamw(int64_t n);

// Closed form for a decoder-only transformer's training step (forward +
// backward) over `tokens` tokens: 6·N·tokens for the parameters that take part
// in matmuls, plus the attention term 6·L·C·T·tokens (causal) or
// 12·L·C·T·tokens (full), C the attention width (heads × head size: grouped
// key/value heads share keys, not the score FLOPs). Independent of the per-op
// accounting above; tests compare the two.
double decoder_step_closed_form(double matmul_params, int64_t n_layer, int64_t n_embd,
                                int64_t seq_len, double tokens, bool causal);

}  // namespace hybrid::profiler::flops
