#include "kernels/cuda/gemm.h"

#include <bit>
#include <stdexcept>
#include <string>

#include "kernels/cuda/caching_allocator.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launchers.h"

namespace hybrid::kernels::cuda {

namespace {

template <class T>
void set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const T& v) {
  HYBRID_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof v));
}
template <class T>
void set_layout(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr, const T& v) {
  HYBRID_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, attr, &v, sizeof v));
}
template <class T>
void set_pref(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t attr, const T& v) {
  HYBRID_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(p, attr, &v, sizeof v));
}

void validate(const GemmCall& c) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("gemm: " + what); };
  if (c.M < 0 || c.N < 0 || c.K < 1)
    fail("dimensions must be M, N >= 0 and K >= 1, got M=" + std::to_string(c.M) +
         " N=" + std::to_string(c.N) + " K=" + std::to_string(c.K));
  if (c.batch < 1) fail("batch must be >= 1, got " + std::to_string(c.batch));
  const int min_lda = c.trans_a ? c.M : c.K;
  const int min_ldb = c.trans_b ? c.K : c.N;
  if (c.lda < std::max(1, min_lda))
    fail("lda " + std::to_string(c.lda) + " < " + std::to_string(min_lda));
  if (c.ldb < std::max(1, min_ldb))
    fail("ldb " + std::to_string(c.ldb) + " < " + std::to_string(min_ldb));
  if (c.ldc < std::max(1, c.N)) fail("ldc " + std::to_string(c.ldc) + " < " + std::to_string(c.N));
  if (c.epilogue != Epilogue::none && !c.bias) fail("bias epilogue without a bias pointer");
  if (c.epilogue == Epilogue::gelu_bias && (!c.aux || c.ld_aux < c.N || c.batch != 1))
    fail("gelu epilogue needs aux [M, N] with ld_aux >= N and batch 1");
}

// The operation: compute type, transposes (cuBLAS's A is our B, its B our A)
// and the epilogue; created into `desc`, whose owner destroys it.
void create_desc(cublasLtMatmulDesc_t& desc, cudaDataType_t type, const GemmCall& call, Epilogue ep,
                 bool tf32) {
  const cublasComputeType_t compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  HYBRID_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F));
  const cublasOperation_t op_a = call.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = call.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSA, op_a);
  set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSB, op_b);
  cublasLtEpilogue_t lt_ep = CUBLASLT_EPILOGUE_DEFAULT;
  if (ep == Epilogue::bias) lt_ep = CUBLASLT_EPILOGUE_BIAS;
  if (ep == Epilogue::gelu_bias) lt_ep = CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  set_desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, lt_ep);
  if (ep != Epilogue::none) set_desc(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, type);
  if (ep == Epilogue::gelu_bias)
    set_desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, int64_t(call.ld_aux));
}

// cuBLAS's A is our B, its B our A, its C our Cᵀ (column-major N×M); strided
// batches when batch > 1. Created into the references, whose owner destroys them.
void create_layouts(cublasLtMatrixLayout_t& a, cublasLtMatrixLayout_t& b, cublasLtMatrixLayout_t& c,
                    cudaDataType_t type, const GemmCall& call) {
  HYBRID_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&a, type, call.trans_b ? call.K : call.N,
                                                 call.trans_b ? call.N : call.K, call.ldb));
  HYBRID_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&b, type, call.trans_a ? call.M : call.K,
                                                 call.trans_a ? call.K : call.M, call.lda));
  HYBRID_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&c, type, call.N, call.M, call.ldc));
  if (call.batch > 1) {
    for (auto [layout, stride] :
         {std::pair{a, call.stride_b}, std::pair{b, call.stride_a}, std::pair{c, call.stride_c}}) {
      set_layout(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, int32_t(call.batch));
      set_layout(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, int64_t(stride));
    }
  }
}

// cuBLASLt's first heuristic choice for the workspace and the pointers'
// alignments; false when it has none.
bool pick_algo(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
               cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, size_t workspace_bytes,
               const GemmKey& key, cublasLtMatmulAlgo_t& algo) {
  cublasLtMatmulPreference_t pref = nullptr;
  HYBRID_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  set_pref(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t(workspace_bytes));
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, uint32_t(key.align_b));
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, uint32_t(key.align_a));
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, uint32_t(key.align_c));
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, uint32_t(key.align_c));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(handle, desc, a, b, c, c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0) return false;
  algo = result.algo;
  return true;
}

}  // namespace

cudaDataType_t lt_type(DType dt) {
  switch (dt) {
    case DType::f32:
      return CUDA_R_32F;
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
  }
  throw std::invalid_argument("gemm: invalid dtype " + std::to_string(int(dt)));
}

uint16_t pointer_alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  if (a == 0) return 256;
  const uintptr_t low = a & (~a + 1);  // lowest set bit
  return uint16_t(low >= 256 ? 256 : low);
}

GemmKey make_gemm_key(DType dt, const GemmCall& c, bool tf32) {
  GemmKey k{};
  k.dt = dt;
  k.trans_a = c.trans_a;
  k.trans_b = c.trans_b;
  k.M = c.M, k.N = c.N, k.K = c.K;
  k.lda = c.lda, k.ldb = c.ldb, k.ldc = c.ldc;
  k.batch = c.batch;
  k.ld_aux = c.epilogue == Epilogue::gelu_bias ? c.ld_aux : 0;
  k.stride_a = c.batch > 1 ? c.stride_a : 0;
  k.stride_b = c.batch > 1 ? c.stride_b : 0;
  k.stride_c = c.batch > 1 ? c.stride_c : 0;
  k.epilogue = c.epilogue;
  k.align_a = pointer_alignment(c.A);
  k.align_b = pointer_alignment(c.B);
  k.align_c = pointer_alignment(c.C);
  k.tf32 = tf32 && dt == DType::f32;
  return k;
}

size_t GemmKeyHash::operator()(const GemmKey& k) const noexcept {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  mix(uint64_t(k.dt)), mix(k.trans_a), mix(k.trans_b), mix(uint32_t(k.M)), mix(uint32_t(k.N));
  mix(uint32_t(k.K)), mix(uint32_t(k.lda)), mix(uint32_t(k.ldb)), mix(uint32_t(k.ldc));
  mix(uint32_t(k.batch)), mix(uint32_t(k.ld_aux)), mix(uint64_t(k.stride_a));
  mix(uint64_t(k.stride_b)), mix(uint64_t(k.stride_c)), mix(uint64_t(k.epilogue));
  mix(k.align_a), mix(k.align_b), mix(k.align_c), mix(k.tf32);
  return size_t(h);
}

struct LtGemm::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // cuBLAS's A (our B), B (our A), C
  cublasLtMatmulAlgo_t algo{};
  bool epilogue_fused = true;  // false: run the epilogue as separate kernels
  ~Plan() {
    if (desc) cublasLtMatmulDescDestroy(desc);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
  }
};

LtGemm::LtGemm(CachingAllocator& alloc, size_t workspace_bytes)
    : alloc_(alloc), workspace_bytes_(workspace_bytes) {
  HYBRID_CUBLAS_CHECK(cublasLtCreate(&handle_));
  workspace_ = alloc_.allocate(workspace_bytes_);
}

LtGemm::~LtGemm() {
  plans_.clear();
  if (workspace_) alloc_.deallocate(workspace_);
  if (handle_) cublasLtDestroy(handle_);
}

size_t LtGemm::cached_plans() const {
  std::lock_guard lock(mutex_);
  return plans_.size();
}

LtGemm::Plan* LtGemm::plan_for(DType dt, const GemmCall& call) {
  const GemmKey key = make_gemm_key(dt, call, allow_tf32_);
  if (auto it = plans_.find(key); it != plans_.end()) return it->second.get();

  auto build = [&](Epilogue ep, Plan& plan) -> bool {
    const cudaDataType_t type = lt_type(dt);
    create_desc(plan.desc, type, call, ep, key.tf32);
    create_layouts(plan.a, plan.b, plan.c, type, call);
    ++heuristic_calls_;
    return pick_algo(handle_, plan.desc, plan.a, plan.b, plan.c, workspace_bytes_, key, plan.algo);
  };

  auto plan = std::make_unique<Plan>();
  if (!build(call.epilogue, *plan)) {
    if (call.epilogue == Epilogue::none)
      throw CudaError("gemm: cuBLASLt has no algorithm for " + std::string(dtype_name(dt)) +
                      " M=" + std::to_string(call.M) + " N=" + std::to_string(call.N) +
                      " K=" + std::to_string(call.K) + " batch=" + std::to_string(call.batch));
    plan = std::make_unique<Plan>();
    if (!build(Epilogue::none, *plan))
      throw CudaError("gemm: cuBLASLt has no algorithm for M=" + std::to_string(call.M) +
                      " N=" + std::to_string(call.N) + " K=" + std::to_string(call.K));
    plan->epilogue_fused = false;
  }
  Plan* raw = plan.get();
  plans_.emplace(key, std::move(plan));
  return raw;
}

void LtGemm::run(DType dt, const GemmCall& call, cudaStream_t stream) {
  validate(call);
  if (call.M == 0 || call.N == 0) return;
  std::lock_guard lock(mutex_);
  Plan* plan = plan_for(dt, call);
  if (plan->epilogue_fused && call.epilogue != Epilogue::none) {
    set_desc(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, call.bias);
    if (call.epilogue == Epilogue::gelu_bias)
      set_desc(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
               static_cast<const void*>(call.aux));
  }
  void* out = call.C;
  // Unfused GELU: the GEMM (+bias) writes the pre-activation to aux, GELU reads it.
  const bool gelu_split = !plan->epilogue_fused && call.epilogue == Epilogue::gelu_bias;
  if (gelu_split && call.beta != 0.0f)
    HYBRID_CUDA_CHECK(cudaMemcpy2DAsync(
        call.aux, size_t(call.ld_aux) * dtype_size(dt), call.C, size_t(call.ldc) * dtype_size(dt),
        size_t(call.N) * dtype_size(dt), size_t(call.M), cudaMemcpyDeviceToDevice, stream));
  if (gelu_split) out = call.aux;
  cublasLtMatrixLayout_t out_layout = plan->c;
  cublasLtMatrixLayout_t aux_layout = nullptr;
  if (gelu_split && call.ld_aux != call.ldc) {
    HYBRID_CUBLAS_CHECK(
        cublasLtMatrixLayoutCreate(&aux_layout, lt_type(dt), call.N, call.M, call.ld_aux));
    out_layout = aux_layout;
  }
  const cublasStatus_t st = cublasLtMatmul(
      handle_, plan->desc, &call.alpha, call.B, plan->a, call.A, plan->b, &call.beta, out,
      out_layout, out, out_layout, &plan->algo, workspace_, workspace_bytes_, stream);
  if (aux_layout) cublasLtMatrixLayoutDestroy(aux_layout);
  if (st != CUBLAS_STATUS_SUCCESS) throw_cublas_error(st, "cublasLtMatmul", __FILE__, __LINE__);
  if (!plan->epilogue_fused && call.epilogue != Epilogue::none) {
    if (call.batch != 1 || call.ldc != call.N || (gelu_split && call.ld_aux != call.N))
      throw CudaError("gemm: unfused bias epilogue needs batch 1 and a dense output");
    add_bias_rows(dt, out, call.bias, call.M, call.N, stream);
    if (gelu_split) gelu_forward(dt, call.C, call.aux, size_t(call.M) * call.N, stream);
  }
}

}  // namespace hybrid::kernels::cuda
