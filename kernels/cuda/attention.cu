// Causal self-attention (NKV key/value heads, NKV = NH for multi-head),
// first version: cuBLASLt strided-batched
// GEMMs around a fused causal softmax (the scale is folded into the QKᵀ GEMM's
// alpha; masking, max-subtraction and normalisation happen in one warp-per-row
// kernel, in fp32). Forward saves the attention matrix att [B, NH, T, T] in dt
// for backward; q, k, v are re-permuted from qkv in backward rather than saved.
// Grouped key/value heads are repeated to every query head of their group on
// the way in (as Hugging Face's repeat_kv), and their gradients summed over the
// group on the way out.
// Packed documents (positions given): the softmax also masks the columns before
// a query's document, t − positions[t].
// The causal upper triangle is computed by the GEMMs and zeroed by the softmax
// (2× the minimal FLOPs; a flash-attention kernel saving only the logsumexp is
// the planned replacement, and attention_saved_bytes lets it change the layout).
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/cuda/caching_allocator.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_types.cuh"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/launch_config.h"
#include "kernels/cuda/launchers.h"

namespace hybrid::kernels::cuda {

namespace {

// A token's qkv row: NH query heads, then NKV key and NKV value heads.
struct QkvRow {
  int NH, NKV, hs;
  __host__ __device__ size_t C() const { return size_t(NH) * hs; }
  __host__ __device__ size_t ld() const { return C() + 2 * size_t(NKV) * hs; }
  __host__ __device__ int group() const { return NH / NKV; }
};

// Element i of a [B, NH, T, hs] tensor: its batch, head, token and channel.
struct HeadIndex {
  size_t b, h, t, d;
};
__device__ __forceinline__ HeadIndex head_index(size_t i, int T_, int NH, int hs) {
  return {i / (size_t(hs) * T_ * NH), (i / (size_t(hs) * T_)) % NH, (i / hs) % T_, i % hs};
}

// qkv [B, T, ld] → q, k, v [B, NH, T, hs] (key/value head h / group for query head h)
template <class T>
__global__ void permute_qkv_kernel(T* q, T* k, T* v, const T* qkv, int B, int T_, QkvRow r) {
  const int hs = r.hs, NH = r.NH;
  const size_t total = size_t(B) * T_ * r.C();
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x) {
    const auto [b, h, t, d] = head_index(i, T_, NH, hs);
    const size_t row = (b * T_ + t) * r.ld(), g = h / size_t(r.group());
    q[i] = qkv[row + h * hs + d];
    k[i] = qkv[row + r.C() + g * hs + d];
    v[i] = qkv[row + r.C() + (size_t(r.NKV) + g) * hs + d];
  }
}

// [B, NH, T, hs] ↔ [B, T, C]; to_heads chooses the direction.
template <class T>
__global__ void permute_heads_kernel(T* dst, const T* src, int B, int T_, int NH, int hs,
                                     bool to_heads) {
  const size_t C = size_t(NH) * hs;
  const size_t total = size_t(B) * T_ * C;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x) {
    const auto [b, h, t, d] = head_index(i, T_, NH, hs);
    const size_t flat = (b * T_ + t) * C + h * hs + d;
    if (to_heads)
      dst[i] = src[flat];
    else
      dst[flat] = src[i];
  }
}

// dqkv's query part += dq [B, NH, T, hs]
template <class T>
__global__ void accumulate_dq_kernel(T* dqkv, const T* dq, int B, int T_, QkvRow r) {
  const int hs = r.hs, NH = r.NH;
  const size_t total = size_t(B) * T_ * r.C();
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x) {
    const auto [b, h, t, d] = head_index(i, T_, NH, hs);
    const size_t dst = (b * T_ + t) * r.ld() + h * hs + d;
    dqkv[dst] = from_f32<T>(to_f32(dqkv[dst]) + to_f32(dq[i]));
  }
}

// dqkv's key and value parts += dk, dv [B, NH, T, hs] summed over each group's
// query heads: one thread per key/value element, so no two write one place.
template <class T>
__global__ void accumulate_dkv_kernel(T* dqkv, const T* dk, const T* dv, int B, int T_, QkvRow r) {
  const int hs = r.hs, NKV = r.NKV, group = r.group();
  const size_t total = size_t(B) * T_ * NKV * hs;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x) {
    const size_t d = i % hs, g = (i / hs) % NKV, t = (i / (size_t(hs) * NKV)) % T_,
                 b = i / (size_t(hs) * NKV * T_);
    float sk = 0.0f, sv = 0.0f;
    for (int j = 0; j < group; ++j) {
      const size_t h = g * group + j;
      const size_t src = ((b * r.NH + h) * T_ + t) * hs + d;
      sk += to_f32(dk[src]);
      sv += to_f32(dv[src]);
    }
    const size_t row = (b * T_ + t) * r.ld();
    const size_t kd = row + r.C() + g * hs + d, vd = row + r.C() + (NKV + g) * hs + d;
    dqkv[kd] = from_f32<T>(to_f32(dqkv[kd]) + sk);
    dqkv[vd] = from_f32<T>(to_f32(dqkv[vd]) + sv);
  }
}

// The first column query row `row` of [B, NH, T] rows sees: its document's
// first token (packed documents), else 0.
__device__ __forceinline__ int first_visible(const int32_t* positions, size_t row, int T_, int NH) {
  if (!positions) return 0;
  const size_t t = row % T_, b = row / (size_t(T_) * NH);
  return int(t) - positions[b * T_ + t];
}

// In place over rows of [B·NH·T, T]: row r is query t = r % T; columns outside
// [first_visible, t] are masked (written as 0).
template <class T>
__global__ void causal_softmax_forward_kernel(T* att, const int32_t* positions, size_t rows, int T_,
                                              int NH) {
  const size_t row = blockIdx.x * size_t(blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int t = int(row % T_), lo = first_visible(positions, row, T_, NH);
  T* x = att + row * T_;
  float m = -INFINITY;
  for (int j = lo + lane; j <= t; j += 32) m = fmaxf(m, to_f32(x[j]));
  m = warp_max(m);
  float sum = 0.0f;
  for (int j = lo + lane; j <= t; j += 32) sum += expf(to_f32(x[j]) - m);
  const float inv = 1.0f / warp_sum(sum);
  for (int j = lane; j < T_; j += 32)
    x[j] = from_f32<T>(j >= lo && j <= t ? expf(to_f32(x[j]) - m) * inv : 0.0f);
}

// In place over datt: dpre[j] = att[j]·(datt[j] − Σ_k att[k]·datt[k]) for the
// visible j (att is 0 at the others).
template <class T>
__global__ void causal_softmax_backward_kernel(T* datt, const T* att, const int32_t* positions,
                                               size_t rows, int T_, int NH) {
  const size_t row = blockIdx.x * size_t(blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int t = int(row % T_), lo = first_visible(positions, row, T_, NH);
  T* d = datt + row * T_;
  const T* a = att + row * T_;
  float dot = 0.0f;
  for (int j = lo + lane; j <= t; j += 32) dot += to_f32(a[j]) * to_f32(d[j]);
  dot = warp_sum(dot);
  for (int j = lane; j < T_; j += 32)
    d[j] = from_f32<T>(j >= lo && j <= t ? to_f32(a[j]) * (to_f32(d[j]) - dot) : 0.0f);
}

void check_shape(int B, int T, int C, int NH, int NKV) {
  if (B <= 0 || T <= 0 || C <= 0 || NH <= 0 || NKV <= 0 || C % NH != 0 || NH % NKV != 0)
    throw std::invalid_argument(
        "attention: need B, T, C, NH, NKV > 0, C % NH == 0 and NH % NKV == 0, got B=" +
        std::to_string(B) + " T=" + std::to_string(T) + " C=" + std::to_string(C) +
        " NH=" + std::to_string(NH) + " NKV=" + std::to_string(NKV));
}

// Batched row-major GEMM over B·NH heads.
GemmCall batched(bool ta, bool tb, int M, int N, int K, float alpha, const void* A, int lda,
                 int64_t sa, const void* Bm, int ldb, int64_t sb, void* C, int ldc, int64_t sc,
                 int batch) {
  GemmCall g;
  g.trans_a = ta, g.trans_b = tb;
  g.M = M, g.N = N, g.K = K;
  g.alpha = alpha;
  g.A = A, g.lda = lda, g.stride_a = sa;
  g.B = Bm, g.ldb = ldb, g.stride_b = sb;
  g.C = C, g.ldc = ldc, g.stride_c = sc;
  g.batch = batch;
  return g;
}

// What forward and backward share: one call's shapes and launch shapes, and
// q, k, v [B, NH, T, hs] (key/value heads repeated) permuted out of the packed
// qkv into scratch by permute_in.
struct Heads {
  int B, T, NH, NKV, hs, BH;
  size_t es, n;  // element size; elements of each of q, k, v
  LaunchConfig ew, rows;
  float scale;
  int64_t s_head, s_att;  // batch strides of a head and of an attention matrix
  Scratch qkvh;
  char* q = qkvh.as<char>();
  char* k = q + n * es;
  char* v = k + n * es;

  Heads(DType dt, int B_, int T_, int C, int NH_, int NKV_, CachingAllocator& alloc)
      : B(B_),
        T(T_),
        NH(NH_),
        NKV(NKV_),
        hs((check_shape(B_, T_, C, NH_, NKV_), C / NH_)),
        BH(B_ * NH_),
        es(dtype_size(dt)),
        n(size_t(B_) * T_ * C),
        ew(launch_config(n, 256, 8192)),
        rows(warp_per_row_config(size_t(BH) * T_, 8)),
        scale(1.0f / std::sqrt(float(hs))),
        s_head(int64_t(T_) * hs),
        s_att(int64_t(T_) * T_),
        qkvh(alloc, 3 * n * es) {}

  QkvRow row() const { return QkvRow{NH, NKV, hs}; }
  template <class E>
  void permute_in(const void* qkv, cudaStream_t s) const {
    permute_qkv_kernel<E><<<ew.grid, ew.block, 0, s>>>(
        reinterpret_cast<E*>(q), reinterpret_cast<E*>(k), reinterpret_cast<E*>(v),
        static_cast<const E*>(qkv), B, T, row());
    HYBRID_CUDA_CHECK_LAUNCH();
  }
};

}  // namespace

size_t attention_saved_bytes(DType dt, int B, int T, int C, int NH) {
  check_shape(B, T, C, NH, NH);
  return size_t(B) * NH * size_t(T) * T * dtype_size(dt);
}

void attention_forward(DType dt, void* out, void* saved, const void* qkv, const int32_t* positions,
                       int B, int T, int C, int NH, int NKV, LtGemm& gemm, CachingAllocator& alloc,
                       cudaStream_t s) {
  const Heads h(dt, B, T, C, NH, NKV, alloc);
  const int hs = h.hs, BH = h.BH;
  const int64_t s_head = h.s_head, s_att = h.s_att;
  Scratch outh(alloc, h.n * h.es);
  dispatch_device_dtype(dt, [&]<class E>(TypeTag<E>) {
    h.permute_in<E>(qkv, s);
    gemm.run(dt,
             batched(false, true, T, T, hs, h.scale, h.q, hs, s_head, h.k, hs, s_head, saved, T,
                     s_att, BH),
             s);
    causal_softmax_forward_kernel<E><<<h.rows.grid, h.rows.block, 0, s>>>(
        static_cast<E*>(saved), positions, size_t(BH) * T, T, NH);
    HYBRID_CUDA_CHECK_LAUNCH();
    gemm.run(dt,
             batched(false, false, T, hs, T, 1.0f, saved, T, s_att, h.v, hs, s_head, outh.get(), hs,
                     s_head, BH),
             s);
    permute_heads_kernel<E>
        <<<h.ew.grid, h.ew.block, 0, s>>>(static_cast<E*>(out), outh.as<E>(), B, T, NH, hs, false);
    HYBRID_CUDA_CHECK_LAUNCH();
  });
}

void attention_backward(DType dt, void* dqkv, const void* dout, const void* qkv, const void* saved,
                        const int32_t* positions, int B, int T, int C, int NH, int NKV,
                        LtGemm& gemm, CachingAllocator& alloc, cudaStream_t s) {
  const Heads h(dt, B, T, C, NH, NKV, alloc);
  const int hs = h.hs, BH = h.BH;
  const int64_t s_head = h.s_head, s_att = h.s_att;
  const size_t n = h.n, es = h.es;
  Scratch grads(alloc, 4 * n * es);  // dout_h, dq, dk, dv
  Scratch datt(alloc, size_t(BH) * T * T * es);
  char* douth = grads.as<char>();
  char* dq = douth + n * es;
  char* dk = dq + n * es;
  char* dv = dk + n * es;
  const LaunchConfig& ew = h.ew;
  dispatch_device_dtype(dt, [&]<class E>(TypeTag<E>) {
    h.permute_in<E>(qkv, s);
    permute_heads_kernel<E><<<ew.grid, ew.block, 0, s>>>(
        reinterpret_cast<E*>(douth), static_cast<const E*>(dout), B, T, NH, hs, true);
    HYBRID_CUDA_CHECK_LAUNCH();
    // datt = dout_h · vᵀ ; dv = attᵀ · dout_h
    gemm.run(dt,
             batched(false, true, T, T, hs, 1.0f, douth, hs, s_head, h.v, hs, s_head, datt.get(), T,
                     s_att, BH),
             s);
    gemm.run(dt,
             batched(true, false, T, hs, T, 1.0f, saved, T, s_att, douth, hs, s_head, dv, hs,
                     s_head, BH),
             s);
    causal_softmax_backward_kernel<E><<<h.rows.grid, h.rows.block, 0, s>>>(
        datt.as<E>(), static_cast<const E*>(saved), positions, size_t(BH) * T, T, NH);
    HYBRID_CUDA_CHECK_LAUNCH();
    // dq = scale · dpre · k ; dk = scale · dpreᵀ · q
    gemm.run(dt,
             batched(false, false, T, hs, T, h.scale, datt.get(), T, s_att, h.k, hs, s_head, dq, hs,
                     s_head, BH),
             s);
    gemm.run(dt,
             batched(true, false, T, hs, T, h.scale, datt.get(), T, s_att, h.q, hs, s_head, dk, hs,
                     s_head, BH),
             s);
    accumulate_dq_kernel<E><<<ew.grid, ew.block, 0, s>>>(static_cast<E*>(dqkv),
                                                         reinterpret_cast<E*>(dq), B, T, h.row());
    HYBRID_CUDA_CHECK_LAUNCH();
    const LaunchConfig kv = launch_config(size_t(B) * T * NKV * hs, 256, 8192);
    accumulate_dkv_kernel<E><<<kv.grid, kv.block, 0, s>>>(
        static_cast<E*>(dqkv), reinterpret_cast<E*>(dk), reinterpret_cast<E*>(dv), B, T, h.row());
    HYBRID_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace hybrid::kernels::cuda
