// The CPU GEMM: oneDNN's matmul primitive, or OpenBLAS where the routes
// (gemm_provider.h) send a shape there because it measured faster on this machine.
//
// - Row-major operands and transposes are strided memory descriptors: no copies.
// - Creating a primitive costs tens of µs, so primitives are cached per
//   (dtype, transposes, M, N, K, leading dimensions, alpha, beta, bias).
// - Scratchpads are user-owned and per thread, so several threads (attention's
//   per-head GEMMs) may execute primitives at once.
// - fp16/bf16 without native support (oneDNN without AVX512_BF16/FP16, or OpenBLAS,
//   whose Debian build has no bf16 GEMM): operands are converted to per-thread fp32
//   scratch (reused across calls), the fp32 GEMM runs, C is converted back in row
//   blocks so the fp32 copy of C stays bounded.
#include "kernels/cpu/gemm.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/gemm_provider.h"
#include "kernels/cpu/openblas.h"
#include "kernels/cpu/simd.h"

namespace hybrid::kernels::cpu {

namespace {

using dnnl::memory;

struct Key {
  DType dt;
  bool trans_a, trans_b, has_bias;
  int M, N, K, lda, ldb, ldc;
  float alpha, beta;
  bool operator==(const Key& o) const {
    return dt == o.dt && trans_a == o.trans_a && trans_b == o.trans_b && has_bias == o.has_bias &&
           M == o.M && N == o.N && K == o.K && lda == o.lda && ldb == o.ldb && ldc == o.ldc &&
           std::memcmp(&alpha, &o.alpha, sizeof alpha) == 0 &&
           std::memcmp(&beta, &o.beta, sizeof beta) == 0;
  }
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    uint32_t a, b;
    std::memcpy(&a, &k.alpha, 4);
    std::memcpy(&b, &k.beta, 4);
    const uint64_t parts[] = {uint64_t(k.dt) | uint64_t(k.trans_a) << 8 | uint64_t(k.trans_b) << 9 |
                                  uint64_t(k.has_bias) << 10,
                              uint64_t(uint32_t(k.M)) << 32 | uint32_t(k.N),
                              uint64_t(uint32_t(k.K)) << 32 | uint32_t(k.lda),
                              uint64_t(uint32_t(k.ldb)) << 32 | uint32_t(k.ldc),
                              uint64_t(a) << 32 | b};
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (uint64_t p : parts) h = (h ^ p) * 0x100000001b3ull + (h >> 29);
    return size_t(h);
  }
};

struct Plan {
  dnnl::matmul prim;
  memory::desc a, b, c, bias, scratch;
  std::string impl;
};

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

memory::data_type to_dnnl(DType dt) {
  switch (dt) {
    case DType::f32:
      return memory::data_type::f32;
    case DType::f16:
      return memory::data_type::f16;
    case DType::bf16:
      return memory::data_type::bf16;
  }
  throw std::logic_error("gemm: invalid dtype");
}

// Builds the primitive, or returns null when oneDNN has no (non-reference)
// implementation for this dtype on this CPU.
std::unique_ptr<Plan> make_plan(const Key& k) {
  const memory::data_type t = to_dnnl(k.dt);
  // op(A)[m,k] lives at m*lda + k, or at k*lda + m when transposed; likewise B.
  const memory::dims sa = k.trans_a ? memory::dims{1, k.lda} : memory::dims{k.lda, 1};
  const memory::dims sb = k.trans_b ? memory::dims{1, k.ldb} : memory::dims{k.ldb, 1};
  auto plan = std::make_unique<Plan>();
  plan->a = memory::desc({k.M, k.K}, t, sa);
  plan->b = memory::desc({k.K, k.N}, t, sb);
  plan->c = memory::desc({k.M, k.N}, t, memory::dims{k.ldc, 1});
  if (k.has_bias) plan->bias = memory::desc({1, k.N}, t, memory::dims{k.N, 1});

  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (k.alpha != 1.0f) attr.set_output_scales(0, {k.alpha});
  if (k.beta != 0.0f) {
    dnnl::post_ops ops;
    ops.append_sum(k.beta);
    attr.set_post_ops(ops);
  }
  try {
    const dnnl::matmul::desc desc = k.has_bias
                                        ? dnnl::matmul::desc(plan->a, plan->b, plan->bias, plan->c)
                                        : dnnl::matmul::desc(plan->a, plan->b, plan->c);
    const dnnl::matmul::primitive_desc pd(desc, attr, cpu_engine());
    plan->impl = pd.impl_info_str();
    // A reference kernel is orders of magnitude slower than converting to fp32.
    if (k.dt != DType::f32 && plan->impl.find("ref") != std::string::npos) return nullptr;
    plan->scratch = pd.scratchpad_desc();
    plan->prim = dnnl::matmul(pd);
  } catch (const dnnl::error& e) {
    if (k.dt != DType::f32) return nullptr;  // no native low-precision kernel: fall back
    throw std::runtime_error(std::string("gemm: oneDNN could not build an fp32 matmul (") +
                             e.what() + ")");
  }
  return plan;
}

// A plain contiguous problem: if even this has no native kernel, the CPU lacks
// the dtype altogether.
Key probe_key(DType dt) {
  return Key{dt, false, true, false, 256, 256, 256, 256, 256, 256, 1.0f, 0.0f};
}

// The cached plan for k; null when k's dtype must go through fp32.
// Once oneDNN is known to have no native kernel for a dtype on this CPU, later
// shapes skip the failed primitive search (tens of ms each) and go straight to
// the fp32 path. A failure for one shape (a bias, odd strides) while the plain
// probe works only sends that shape to fp32.
const Plan* find_plan(const Key& k) {
  static std::mutex mutex;
  static std::unordered_map<Key, std::unique_ptr<Plan>, KeyHash> cache;
  static bool unsupported[3] = {false, false, false};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(k);
  if (it != cache.end()) return it->second.get();
  std::unique_ptr<Plan> plan = unsupported[int(k.dt)] ? nullptr : make_plan(k);
  if (!plan && !unsupported[int(k.dt)]) {
    const Key probe = probe_key(k.dt);
    auto p = cache.find(probe);
    if (p == cache.end()) p = cache.emplace(probe, probe == k ? nullptr : make_plan(probe)).first;
    if (!p->second) unsupported[int(k.dt)] = true;
  }
  return cache.emplace(k, std::move(plan)).first->second.get();
}

// The memory objects and argument map of one plan on one thread, made once and
// re-pointed with set_data_handle: building them per call costs more than a
// small attention GEMM's arithmetic.
struct ThreadArgs {
  memory a, b, c, bias, scratch;
  std::unordered_map<int, memory> args;
};

void execute(const Plan& p, const void* A, const void* B, void* C, const void* bias) {
  thread_local dnnl::stream stream(cpu_engine());
  thread_local std::vector<char> scratch;
  thread_local std::unordered_map<const Plan*, ThreadArgs> per_plan;
  const size_t scratch_bytes = p.scratch.get_size();
  if (scratch.size() < scratch_bytes) scratch.resize(scratch_bytes);
  auto it = per_plan.find(&p);
  if (it == per_plan.end()) {
    dnnl::engine& eng = cpu_engine();
    ThreadArgs t;
    t.a = memory(p.a, eng, nullptr);
    t.b = memory(p.b, eng, nullptr);
    t.c = memory(p.c, eng, nullptr);
    t.scratch = memory(p.scratch, eng, nullptr);
    t.args = {{DNNL_ARG_SRC, t.a},
              {DNNL_ARG_WEIGHTS, t.b},
              {DNNL_ARG_DST, t.c},
              {DNNL_ARG_SCRATCHPAD, t.scratch}};
    if (!p.bias.is_zero()) {
      t.bias = memory(p.bias, eng, nullptr);
      t.args.emplace(DNNL_ARG_BIAS, t.bias);
    }
    it = per_plan.emplace(&p, std::move(t)).first;
  }
  ThreadArgs& t = it->second;
  t.a.set_data_handle(const_cast<void*>(A));
  t.b.set_data_handle(const_cast<void*>(B));
  t.c.set_data_handle(C);
  t.scratch.set_data_handle(scratch.data());
  if (bias) t.bias.set_data_handle(const_cast<void*>(bias));
  p.prim.execute(stream, t.args);
  stream.wait();
}

// rows × cols of src (row stride ld) → contiguous fp32 dst, or back.
template <class T>
void rows_to_f32(float* dst, const T* src, int rows, int cols, int ld) {
#pragma omp parallel for schedule(static) if (size_t(rows) * cols > kParallelMin)
  for (int r = 0; r < rows; ++r) to_f32(dst + size_t(r) * cols, src + size_t(r) * ld, cols);
}
template <class T>
void rows_from_f32(T* dst, const float* src, int rows, int cols, int ld) {
#pragma omp parallel for schedule(static) if (size_t(rows) * cols > kParallelMin)
  for (int r = 0; r < rows; ++r) from_f32(dst + size_t(r) * ld, src + size_t(r) * cols, cols);
}

// C = alpha·op(A)·op(B) + beta·C (+ bias) in fp32 on one provider.
using GemmF32 = void (*)(const Key& k, const float* A, int lda, const float* B, int ldb, float* C,
                         int ldc, const float* bias);

void onednn_f32(const Key& k, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                const float* bias) {
  const Key f{DType::f32, k.trans_a, k.trans_b, bias != nullptr, k.M,   k.N, k.K,
              lda,        ldb,       ldc,       k.alpha,         k.beta};
  execute(*find_plan(f), A, B, C, bias);  // fp32 always has a plan (or find_plan throws)
}

// OpenBLAS has no bias: C starts as the bias rows and the product is added (beta = 1).
void openblas_f32(const Key& k, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                  const float* bias) {
  float beta = k.beta;
  if (bias) {
#pragma omp parallel for schedule(static) if (size_t(k.M) * k.N > kParallelMin)
    for (int i = 0; i < k.M; ++i) std::memcpy(C + size_t(i) * ldc, bias, sizeof(float) * k.N);
    beta = 1.0f;
  }
  openblas::sgemm(k.trans_a, k.trans_b, k.M, k.N, k.K, k.alpha, A, lda, B, ldb, beta, C, ldc);
}

// The low-precision path without native support (or on a provider without
// fp16/bf16): fp32 scratch copies, the fp32 GEMM on `f32`.
template <class T>
void gemm_via_f32(const Key& k, const T* A, const T* B, T* C, const T* bias, GemmF32 f32) {
  thread_local std::vector<float> a32, b32, c32, bias32;
  const int a_rows = k.trans_a ? k.K : k.M, a_cols = k.trans_a ? k.M : k.K;
  const int b_rows = k.trans_b ? k.N : k.K, b_cols = k.trans_b ? k.K : k.N;
  a32.resize(size_t(a_rows) * a_cols);
  b32.resize(size_t(b_rows) * b_cols);
  rows_to_f32(a32.data(), A, a_rows, a_cols, k.lda);
  rows_to_f32(b32.data(), B, b_rows, b_cols, k.ldb);
  if (bias) {
    bias32.resize(size_t(k.N));
    to_f32(bias32.data(), bias, size_t(k.N));
  }
  // Row blocks of C bounded at ~4M floats (16 MiB), at least 64 rows.
  constexpr size_t kMaxC = size_t(1) << 22;
  const int block = int(std::clamp<size_t>(kMaxC / size_t(k.N), 64, size_t(k.M)));
  c32.resize(size_t(block) * k.N);
  for (int i0 = 0; i0 < k.M; i0 += block) {
    const int mb = std::min(block, k.M - i0);
    T* c_block = C + size_t(i0) * k.ldc;
    if (k.beta != 0.0f) rows_to_f32(c32.data(), c_block, mb, k.N, k.ldc);
    const float* a_block = k.trans_a ? a32.data() + i0 : a32.data() + size_t(i0) * a_cols;
    Key block_key = k;
    block_key.M = mb;
    f32(block_key, a_block, a_cols, b32.data(), b_cols, c32.data(), k.N,
        bias ? bias32.data() : nullptr);
    rows_from_f32(c_block, c32.data(), mb, k.N, k.ldc);
  }
}

// K == 0: op(A)·op(B) is empty, C = beta·C (+ bias).
template <class T>
void gemm_empty_k(int M, int N, float beta, T* C, int ldc, const T* bias) {
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      const float c = beta == 0.0f ? 0.0f : beta * load(C[size_t(i) * ldc + j]);
      C[size_t(i) * ldc + j] = store<T>(c + (bias ? load(bias[j]) : 0.0f));
    }
}

void check_args(bool trans_a, bool trans_b, int M, int N, int K, int lda, int ldb, int ldc,
                float alpha, float beta, const void* bias) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("gemm: " + what); };
  if (M < 0 || N < 0 || K < 0)
    fail("negative size (M = " + std::to_string(M) + ", N = " + std::to_string(N) +
         ", K = " + std::to_string(K) + ")");
  const int min_lda = std::max(1, trans_a ? M : K), min_ldb = std::max(1, trans_b ? K : N);
  if (lda < min_lda)
    fail("lda = " + std::to_string(lda) + " is smaller than " + std::to_string(min_lda));
  if (ldb < min_ldb)
    fail("ldb = " + std::to_string(ldb) + " is smaller than " + std::to_string(min_ldb));
  if (ldc < std::max(1, N))
    fail("ldc = " + std::to_string(ldc) + " is smaller than N = " + std::to_string(N));
  if (bias && (alpha != 1.0f || beta != 0.0f)) fail("a bias needs alpha = 1 and beta = 0");
}

}  // namespace

void gemm_on(GemmProvider provider, DType dt, bool trans_a, bool trans_b, int M, int N, int K,
             float alpha, const void* A, int lda, const void* B, int ldb, float beta, void* C,
             int ldc, const void* bias) {
  check_args(trans_a, trans_b, M, N, K, lda, ldb, ldc, alpha, beta, bias);
  if (M == 0 || N == 0) return;
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    if (K == 0) {
      gemm_empty_k(M, N, beta, static_cast<T*>(C), ldc, static_cast<const T*>(bias));
      return;
    }
    const Key key{dt, trans_a, trans_b, bias != nullptr, M, N, K, lda, ldb, ldc, alpha, beta};
    if constexpr (std::is_same_v<T, bf16_t>) {
      if (provider == GemmProvider::avx512bf16 && bf16_kernel_available()) {
        count_gemm_call(GemmProvider::avx512bf16);
        gemm_bf16_avx512(trans_a, trans_b, M, N, K, alpha, static_cast<const bf16_t*>(A), lda,
                         static_cast<const bf16_t*>(B), ldb, beta, static_cast<bf16_t*>(C), ldc,
                         static_cast<const bf16_t*>(bias));
        return;
      }
    }
    if (provider == GemmProvider::openblas && openblas::library().loaded) {
      count_gemm_call(GemmProvider::openblas);
      if constexpr (std::is_same_v<T, float>)
        openblas_f32(key, static_cast<const float*>(A), lda, static_cast<const float*>(B), ldb,
                     static_cast<float*>(C), ldc, static_cast<const float*>(bias));
      else
        gemm_via_f32(key, static_cast<const T*>(A), static_cast<const T*>(B), static_cast<T*>(C),
                     static_cast<const T*>(bias), openblas_f32);
      return;
    }
    count_gemm_call(GemmProvider::onednn);
    if (const Plan* plan = find_plan(key)) {
      execute(*plan, A, B, C, bias);
    } else if constexpr (!std::is_same_v<T, float>) {
      gemm_via_f32(key, static_cast<const T*>(A), static_cast<const T*>(B), static_cast<T*>(C),
                   static_cast<const T*>(bias), onednn_f32);
    }
  });
}

void gemm(DType dt, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const void* A,
          int lda, const void* B, int ldb, float beta, void* C, int ldc, const void* bias) {
  const GemmProvider provider =
      omp_in_parallel() ? GemmProvider::onednn : gemm_route({dt, trans_a, trans_b, M, N, K});
  gemm_on(provider, dt, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias);
}

bool gemm_native(DType dt) { return dt == DType::f32 || find_plan(probe_key(dt)) != nullptr; }

std::string gemm_impl_name(DType dt, bool trans_a, bool trans_b, int M, int N, int K) {
  const Key key{dt, trans_a,         trans_b,         false, M,    N,
                K,  trans_a ? M : K, trans_b ? K : N, N,     1.0f, 0.0f};
  const Plan* plan = find_plan(key);
  if (plan) return plan->impl;
  return "fp32 fallback (" + gemm_impl_name(DType::f32, trans_a, trans_b, M, N, K) + ")";
}

}  // namespace hybrid::kernels::cpu
