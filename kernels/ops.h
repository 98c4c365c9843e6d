// The backend-neutral op interface: every op the engine runs is declared here
// once, and each backend (kernels/cpu, kernels/cuda) implements all of them.
//
// Conventions, shared by every backend:
// - Shapes follow GPT-2: B batch, T sequence, C channels, NH heads, V vocabulary,
//   Vp padded vocabulary (rows >= V of the embedding are padding). Row-major.
// - `dt` is the storage dtype of activations, parameters and their gradients in
//   that call; arithmetic is fp32. Layernorm statistics and cross-entropy
//   statistics are fp32 whatever dt is.
// - Every backward op ACCUMULATES (+=) into every gradient it writes, inputs and
//   parameters alike, so that tied weights, residual branches and gradient
//   accumulation compose without copies. The one exception is
//   cross_entropy_backward, which overwrites (it may run in place on the logits).
//   A null gradient pointer means "not needed" and is skipped.
// - Pointers are device pointers of the backend (host memory on the CPU).
// - Linear layers use PyTorch's layout: weight [out, in], out = inp · weightᵀ + bias.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include "kernels/dtype.h"
#include "kernels/sign_compression.h"

namespace hybrid::kernels {

enum class BackendKind { cpu, cuda };

// What the Adam-style optimizers (AdamW, Lamb) share: two moments with their
// betas, eps, weight decay and the bias-corrected step.
struct MomentParams {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  bool bias_correction = true;
  int64_t step = 1;  // 1-based, for bias correction
};

struct AdamWParams : MomentParams {
  bool decoupled_weight_decay = true;  // AdamW; false = Adam with L2 added to the gradient
};

// torch.optim.SGD (what DeepSpeed builds for "SGD").
struct SgdParams {
  float lr = 1e-3f;
  float momentum = 0.0f;
  float dampening = 0.0f;
  float weight_decay = 0.0f;
  bool nesterov = false;
  bool first_step = false;  // the momentum buffer starts as the gradient itself (torch's clone)
};

// DeepSpeed's FusedLamb.
struct LambParams : MomentParams {
  bool eps_inside_sqrt = false;  // sqrt(v + eps) instead of sqrt(v) + eps
};

// Lamb's step size: lr · sqrt(1 − β2^t) / (1 − β1^t) with bias correction (fp32,
// as DeepSpeed computes it), else lr. Every backend uses this one definition.
inline float lamb_step_size(const LambParams& p) {
  if (!p.bias_correction) return p.lr;
  const float bc1 = float(1.0 - std::pow(double(p.beta1), double(p.step)));
  const float bc2 = float(1.0 - std::pow(double(p.beta2), double(p.step)));
  return p.lr * std::sqrt(bc2) / bc1;
}

// Result of one pass over a gradient buffer: sum of squares (for the global norm)
// and whether any element is inf/NaN (for the fp16 loss scaler).
struct GradStats {
  double sum_squares = 0.0;
  bool non_finite = false;
};

// A backend could not provide memory (device memory exhausted, pinned host
// memory refused). The engine's tracking allocator turns it into
// engine::OutOfMemoryError naming the category, so a real device OOM is handled
// like an exceeded budget (status "oom", exit 3, OOM pruning).
class BackendOutOfMemory : public std::runtime_error {
 public:
  BackendOutOfMemory(const std::string& msg, size_t requested)
      : std::runtime_error(msg), requested_(requested) {}
  size_t requested() const { return requested_; }

 private:
  size_t requested_;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual BackendKind kind() const = 0;
  virtual std::string name() const = 0;  // e.g. "cpu (oneDNN, 2 threads)", "cuda:0 NVIDIA H200"
  virtual bool supports(DType dt) const = 0;

  // ---- memory --------------------------------------------------------------
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* ptr, size_t bytes) = 0;
  virtual void zero(void* ptr, size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;  // device → device
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes) = 0;
  virtual void copy_from_host(void* dst, const void* host_src, size_t bytes) = 0;
  virtual void synchronize() = 0;  // waits for all queued work of the compute stream

  // ---- host memory and transfers (the offloaded optimizer) ------------------
  // Host memory that copies to and from the device are fastest with: page-locked
  // on CUDA, plain page-aligned memory otherwise (page alignment also lets the
  // NVMe offload use direct file I/O on it). Throws BackendOutOfMemory.
  virtual void* allocate_host(size_t bytes) {
    if (bytes == 0) return nullptr;
    void* p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    if (!p)
      throw BackendOutOfMemory(
          "out of host memory: cannot allocate " + std::to_string(bytes) + " bytes", bytes);
    return p;
  }
  virtual void free_host(void* ptr, size_t /*bytes*/) { std::free(ptr); }
  virtual bool pins_host_memory() const { return false; }
  // Copies between device memory and host memory, queued after the work already
  // on the compute stream; compute work queued after copy_from_host_async sees
  // the data. The host buffer must stay untouched until wait_transfer(ticket)
  // returns. Default (host backends): synchronous copies, ticket 0.
  virtual uint64_t copy_to_host_async(void* host_dst, const void* src, size_t bytes) {
    copy_to_host(host_dst, src, bytes);
    return 0;
  }
  virtual uint64_t copy_from_host_async(void* dst, const void* host_src, size_t bytes) {
    copy_from_host(dst, host_src, bytes);
    return 0;
  }
  virtual void wait_transfer(uint64_t /*ticket*/) {}

  // What a device communicator (NCCL) needs, so that engine code never includes
  // CUDA headers: the cudaStream_t values and the device ordinal. Null / -1 on
  // host backends.
  virtual void* compute_stream_handle() const { return nullptr; }
  virtual void* comm_stream_handle() const { return nullptr; }
  virtual int device_index() const { return -1; }

  // ---- dense algebra -------------------------------------------------------
  // C[M,N] = alpha · op(A) · op(B) + beta · C, row-major, all in dt (fp32 accumulate).
  virtual void gemm(DType dt, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                    const void* A, int lda, const void* B, int ldb, float beta, void* C,
                    int ldc) = 0;

  // out[M,N] = inp[M,K] · weight[N,K]ᵀ + bias[N] (bias may be null).
  virtual void matmul_forward(DType dt, void* out, const void* inp, const void* weight,
                              const void* bias, int M, int K, int N) = 0;
  // dinp += dout · weight; dweight += doutᵀ · inp; dbias += Σ_rows dout.
  virtual void matmul_backward(DType dt, void* dinp, void* dweight, void* dbias, const void* dout,
                               const void* inp, const void* weight, int M, int K, int N) = 0;

  // ---- transformer ops -----------------------------------------------------
  // out[b,t,:] = wte[tokens[b,t],:] + wpe[p,:], p = positions[b·T + t] when
  // positions is non-null (packed documents, generation), else t.
  virtual void encoder_forward(DType dt, void* out, const int32_t* tokens, const int32_t* positions,
                               const void* wte, const void* wpe, int B, int T, int C) = 0;
  virtual void encoder_backward(DType dt, void* dwte, void* dwpe, const void* dout,
                                const int32_t* tokens, const int32_t* positions, int B, int T,
                                int C) = 0;

  // N rows of C channels; mean and rstd are fp32 [N], saved for backward.
  virtual void layernorm_forward(DType dt, void* out, float* mean, float* rstd, const void* inp,
                                 const void* weight, const void* bias, int N, int C) = 0;
  virtual void layernorm_backward(DType dt, void* dinp, void* dweight, void* dbias,
                                  const void* dout, const void* inp, const void* weight,
                                  const float* mean, const float* rstd, int N, int C) = 0;

  // GELU, tanh approximation.
  virtual void gelu_forward(DType dt, void* out, const void* inp, size_t n) = 0;
  virtual void gelu_backward(DType dt, void* dinp, const void* inp, const void* dout, size_t n) = 0;

  // The Llama family's ops (Hugging Face LlamaForCausalLM semantics).
  //
  // RMSNorm over the last dimension, fp32 statistics whatever dt:
  // out = x · rstd · weight, rstd = 1/√(mean(x²) + eps) (saved, [N]).
  virtual void rmsnorm_forward(DType dt, void* out, float* rstd, const void* inp,
                               const void* weight, int N, int C, float eps) = 0;
  virtual void rmsnorm_backward(DType dt, void* dinp, void* dweight, const void* dout,
                                const void* inp, const void* weight, const float* rstd, int N,
                                int C) = 0;
  // Rotary position embedding, in place, rotate-half layout: in each of the first
  // `heads` heads of `head_dim` of every one of N rows (row stride `stride`
  // elements: q then k heads of a packed qkv row), the pair (x[i], x[i + d/2])
  // turns by angle p·θ^(−2i/d), p the row's position: positions[row] when given,
  // else row mod T. cos and sin in fp32 as HF computes them (inv_freq, then
  // p·inv_freq, in fp32). Backward turns the gradient back (the transpose),
  // in place: it overwrites rather than accumulates, as the rotation is applied
  // to the buffer that holds it.
  virtual void rope_forward(DType dt, void* x, const int32_t* positions, int N, int T, int stride,
                            int heads, int head_dim, float theta) = 0;
  virtual void rope_backward(DType dt, void* dx, const int32_t* positions, int N, int T, int stride,
                             int heads, int head_dim, float theta) = 0;
  // SwiGLU: gate_up [N, 2·I] holds gate then up (one GEMM of the concatenated
  // weights); out [N, I] = silu(gate) · up.
  virtual void swiglu_forward(DType dt, void* out, const void* gate_up, int N, int I) = 0;
  virtual void swiglu_backward(DType dt, void* dgate_up, const void* dout, const void* gate_up,
                               int N, int I) = 0;

  // Causal self-attention with NH query heads of hs = C / NH channels and NKV
  // key/value heads (NKV = NH: multi-head, GPT-2; NKV dividing NH: grouped-query,
  // Llama; query head h reads key/value head h / (NH / NKV)). qkv
  // [B, T, C + 2·NKV·hs] holds per token the query heads, the key heads, then
  // the value heads (GPT-2's c_attn layout when NKV = NH); out [B, T, C]. What
  // forward keeps for backward is the backend's choice: it writes
  // attention_saved_bytes() bytes to `saved` (independent of NKV).
  // Packed documents: with positions ([B·T], each token's position in its
  // document, 0 at a document's first token), token t of a row attends only to
  // tokens t − positions[t] .. t of its row, its own document's; null: a row is
  // one document (positions[t] = t). 0 <= positions[t] <= t.
  virtual size_t attention_saved_bytes(DType dt, int B, int T, int C, int NH) const = 0;
  virtual void attention_forward(DType dt, void* out, void* saved, const void* qkv,
                                 const int32_t* positions, int B, int T, int C, int NH,
                                 int NKV) = 0;
  virtual void attention_backward(DType dt, void* dqkv, const void* dout, const void* qkv,
                                  const void* out, const void* saved, const int32_t* positions,
                                  int B, int T, int C, int NH, int NKV) = 0;

  // Generation: attention over a key/value cache. k_cache and v_cache are
  // [B, NKV, max_tokens, hs] in cache_dt (a head's positions contiguous; any
  // dtype, independent of dt). Row b's T new tokens stand at positions
  // start[b] .. start[b] + T − 1 (start: host, B values; start[b] + T <=
  // max_tokens): their key and value heads (qkv as attention_forward's, in dt,
  // rotated already where the family rotates) are converted to cache_dt and
  // written to the cache there, then each query attends causally over the
  // cache's positions 0 .. its own. out [B, T, C] in dt. Keeps nothing for backward.
  virtual void attention_cached_forward(DType dt, void* out, const void* qkv, DType cache_dt,
                                        void* k_cache, void* v_cache, const int* start, int B,
                                        int T, int C, int NH, int NKV, int max_tokens) = 0;

  // out = a + b, n elements.
  virtual void residual_forward(DType dt, void* out, const void* a, const void* b, size_t n) = 0;

  // Fused softmax + cross-entropy over the first V of Vp logits per row (N rows).
  // losses[i] = logsumexp(logits[i]) - logits[i, targets[i]]; lse (fp32 [N]) is saved.
  // A negative target is no target (padding, a packed row's unused tail): its
  // loss is 0 and its row's gradient 0, here and in the shard ops below.
  virtual void cross_entropy_forward(DType dt, float* losses, float* lse, const void* logits,
                                     const int32_t* targets, int N, int V, int Vp) = 0;
  // dlogits[i,:] = dloss · (softmax(logits[i]) - onehot(targets[i])); padded columns
  // get 0. Overwrites dlogits, which may alias logits.
  virtual void cross_entropy_backward(DType dt, void* dlogits, const void* logits, const float* lse,
                                      const int32_t* targets, float dloss, int N, int V,
                                      int Vp) = 0;

  // ---- tensor parallelism: vocabulary shards ---------------------------------
  // A rank holds `rows` rows of wte (and as many logit columns) from vocabulary id
  // `begin`; the engine's collectives run between these ops. Token and target ids
  // outside the shard belong to other ranks: they are skipped, not rejected.
  //
  // out[b,t,:] = (wte[tokens[b,t] - begin, :] if begin <= tokens[b,t] < begin + rows, else 0)
  //            + (wpe[p, :] if wpe is non-null, else 0), p as in encoder_forward
  // Summed over the shards (wpe on one of them) this is encoder_forward.
  virtual void encoder_shard_forward(DType dt, void* out, const int32_t* tokens,
                                     const int32_t* positions, const void* wte, const void* wpe,
                                     int B, int T, int C, int begin, int rows) = 0;
  // dwte[tokens[b,t] - begin, :] += dout[b,t,:] for tokens in the shard (others skipped);
  // dwpe (when non-null) += as encoder_backward. Deterministic like encoder_backward.
  virtual void encoder_shard_backward(DType dt, void* dwte, void* dwpe, const void* dout,
                                      const int32_t* tokens, const int32_t* positions, int B, int T,
                                      int C, int begin, int rows) = 0;
  // logits [N, Vs]: column j is vocabulary id begin + j; the first V columns are real
  // (0 <= V <= Vs). stats is fp32 [2N]: stats[i] = logsumexp of row i's V real
  // columns (-inf when V == 0), stats[N + i] = logits[i, targets[i] - begin] when
  // begin <= targets[i] < begin + V, else 0.
  virtual void cross_entropy_shard_forward(DType dt, float* stats, const void* logits,
                                           const int32_t* targets, int N, int begin, int V,
                                           int Vs) = 0;
  // gathered: every shard's stats, [shards][2N] fp32 (device memory). Writes
  // lse[i] = log Σ_s exp(stats_s[i]) (max-shifted; shards with -inf contribute 0)
  // and losses[i] = lse[i] - Σ_s stats_s[N + i] (0 where targets[i] < 0).
  virtual void cross_entropy_combine_shards(float* losses, float* lse, const float* gathered,
                                            const int32_t* targets, int shards, int N) = 0;
  // dlogits[i, j] = dloss · (exp(logits[i, j] - lse[i]) - [begin + j == targets[i]]) for
  // j < V, 0 for V <= j < Vs. Overwrites; dlogits may alias logits (as
  // cross_entropy_backward).
  virtual void cross_entropy_shard_backward(DType dt, void* dlogits, const void* logits,
                                            const float* lse, const int32_t* targets, float dloss,
                                            int N, int begin, int V, int Vs) = 0;

  // ---- elementwise and reductions -----------------------------------------
  // dst[i] (dst_dt) = convert(src[i]) (src_dt).
  virtual void convert(DType dst_dt, void* dst, DType src_dt, const void* src, size_t n) = 0;
  // dst[i] += alpha · src[i], across dtypes.
  virtual void add(DType dst_dt, void* dst, DType src_dt, const void* src, size_t n,
                   float alpha) = 0;
  // x[i] *= alpha.
  virtual void scale(DType dt, void* x, size_t n, float alpha) = 0;
  virtual GradStats grad_stats(DType dt, const void* x, size_t n) = 0;

  // Fused AdamW on fp32 master weights: g = grad · grad_scale (grad in grad_dt);
  // updates master, m, v; writes the updated weights to param_out in param_dt when
  // param_out is non-null (the 16-bit copy the model computes with).
  virtual void adamw(const AdamWParams& p, float* master, float* m, float* v, DType grad_dt,
                     const void* grad, float grad_scale, DType param_dt, void* param_out,
                     size_t n) = 0;

  // SGD on fp32 master weights (torch.optim.SGD): g = grad·grad_scale + wd·w; with
  // momentum, buf = g on the first step, else momentum·buf + (1 − dampening)·g, and
  // the step is g + momentum·buf (nesterov) or buf; w −= lr·step. momentum_buf is
  // null when momentum is 0. param_out as for adamw.
  virtual void sgd(const SgdParams& p, float* master, float* momentum_buf, DType grad_dt,
                   const void* grad, float grad_scale, DType param_dt, void* param_out,
                   size_t n) = 0;

  // DeepSpeed's fused Lamb, in two passes so that the trust ratio of a parameter
  // tensor can be measured over the whole tensor even when ZeRO splits it across
  // ranks (the caller sums the passes' statistics over ranks in between).
  // `bounds` (host, segments + 1 offsets from 0 to n, increasing) cuts the n
  // elements into segments, one per parameter tensor (or its part in this range).
  // u = m / (sqrt(v) + eps) + wd·w is the update before bias correction, whose
  // norm DeepSpeed's ratio uses.
  // Pass 1: m and v take the gradient grad·grad_scale; adds Σw² and Σu² of each
  // segment s into sums[2s] and sums[2s + 1] (host). The CPU backend adds in a
  // fixed order over blocks of 2048 elements counted from the start of the call,
  // so splitting a range at multiples of 2048 and calling once per part (the
  // offloaded optimizer does) gives the same sums.
  virtual void lamb_moments(const LambParams& p, const float* master, float* m, float* v,
                            DType grad_dt, const void* grad, float grad_scale,
                            const int64_t* bounds, int segments, double* sums) = 0;
  // Pass 2: w −= lamb_step_size(p) · coeffs[s] · u over segment s (coeffs: host);
  // reads no gradient. param_out as for adamw.
  virtual void lamb_update(const LambParams& p, float* master, const float* m, const float* v,
                           const int64_t* bounds, int segments, const float* coeffs, DType param_dt,
                           void* param_out) = 0;

  // ---- 1-bit compression (kernels/sign_compression.h) ------------------------
  // Signs are packed as kernels/sign_bits.h packs them (+ for x >= 0).
  // Worker phase, per tensor k: worker_error += data (zeros past n); scales[k]
  // = ‖worker_error‖₂/√P; the signs of chunk j go to send + j·block + offset;
  // worker_error −= scales[k]·sign. scales: count floats, backend memory.
  virtual void sign_compress_worker(const SignGroup& g, uint8_t* send, float* scales) = 0;
  // Server phase, per tensor k: server_error += Σ_r (all_scales[r·count + k]/W)
  // ·sign_r, summed in rank order, rank r's signs of this chunk at received +
  // r·block + offset; scales[k] = ‖server_error‖₂/√(P/W); its signs go to
  // signs + offset; server_error −= scales[k]·sign.
  virtual void sign_compress_server(const SignGroup& g, const uint8_t* received,
                                    const float* all_scales, uint8_t* signs, float* scales) = 0;
  // The result, per tensor k: data[j·P/W + i] = all_scales[j·count + k] · the
  // sign of bit i at received + j·block + offset, for the indices below n.
  virtual void sign_decompress(const SignGroup& g, const uint8_t* received,
                               const float* all_scales) = 0;

  // ---- the 1-bit optimizers' elementwise steps ------------------------------
  // m = β1·m + (1 − β1)·g with g = grad·grad_scale (grad in grad_dt).
  virtual void momentum_update(float beta1, float* m, DType grad_dt, const void* grad,
                               float grad_scale, size_t n) = 0;
  // Adam with a frozen variance and no bias correction: u = lr·(m/(√v + eps) +
  // wd·w), w −= u, and accumulator −= u where it is non-null (0/1 Adam's local
  // steps). param_out as for adamw.
  virtual void frozen_variance_step(const MomentParams& p, float* master, const float* m,
                                    const float* v, float* accumulator, DType param_dt,
                                    void* param_out, size_t n) = 0;
  // 0/1 Adam's synchronisation of its local steps, around the compressed
  // average of the accumulator a: begin undoes the local updates and weights
  // a by the frozen denominator, w −= a, a ·= √v + eps; end applies the
  // average, m = −a/lr_sum, w += a/(√v + eps), a = 0 (param_out as for adamw).
  virtual void zero_one_sync_begin(float* master, float* accumulator, const float* v, float eps,
                                   size_t n) = 0;
  virtual void zero_one_sync_end(float* master, float* m, float* accumulator, const float* v,
                                 float eps, float lr_sum, DType param_dt, void* param_out,
                                 size_t n) = 0;

  // 1-bit LAMB's compressed phase, over segments as for lamb_moments (bounds,
  // scales, sums and stats: host). onebit_lamb_momentum: out[i] = (β1·m[i] +
  // (1 − β1)·grad[i]·grad_scale)·scales[s] over segment s; m is left as it was.
  virtual void onebit_lamb_momentum(float beta1, const float* m, DType grad_dt, const void* grad,
                                    float grad_scale, const int64_t* bounds, int segments,
                                    const float* scales, float* out) = 0;
  // sums[s] += Σx² over segment s, in fp64.
  virtual void segment_sum_squares(const float* x, const int64_t* bounds, int segments,
                                   double* sums) = 0;
  // After the exchange, over segment s: m' = exchanged/scales[s]; the gradient
  // it implies, (m' − β1·m)/(1 − β1), enters fresh with β2; m = m'. With d =
  // √v + eps, q = m'/d and u = q + wd·w (wd > 0): stats[3s] = max(stats[3s],
  // d/(√fresh + eps)), stats[3s + 1] += Σq², stats[3s + 2] += Σu² (fp64).
  virtual void onebit_lamb_refresh(const MomentParams& p, const float* exchanged,
                                   const int64_t* bounds, int segments, const float* scales,
                                   float* m, const float* v, float* fresh, const float* master,
                                   double* stats) = 0;
};

// The CPU backend always exists; its GEMM library is measured in bench/.
std::unique_ptr<Backend> make_cpu_backend();

}  // namespace hybrid::kernels
