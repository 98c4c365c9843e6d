// GEMMs through cuBLASLt, in row-major terms (the rest of the backend's layout).
//
// Row-major C[M,N] = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, so a call
// swaps A and B and passes (N, M). fp32 accumulation for every dtype
// (CUBLAS_COMPUTE_32F; TF32 only when allowed). Epilogues fuse the bias add and
// GELU into the GEMM. Batched calls use strided batch layouts (attention).
//
// Plans (descriptors, layouts and the heuristic's algorithm) are cached per
// shape key, so the heuristic runs once per distinct GEMM of a model. The
// workspace (32 MiB, Hopper's recommendation) comes from the caching allocator.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "kernels/dtype.h"

namespace hybrid::kernels::cuda {

class CachingAllocator;

enum class Epilogue : uint8_t { none = 0, bias = 1, gelu_bias = 2 };

// Row-major: C = alpha·op(A)·op(B) + beta·C, batch_count matrices apart by the strides.
struct GemmCall {
  bool trans_a = false, trans_b = false;
  int M = 0, N = 0, K = 0;
  float alpha = 1.0f, beta = 0.0f;
  const void* A = nullptr;
  int lda = 0;
  int64_t stride_a = 0;
  const void* B = nullptr;
  int ldb = 0;
  int64_t stride_b = 0;
  void* C = nullptr;
  int ldc = 0;
  int64_t stride_c = 0;
  int batch = 1;
  Epilogue epilogue = Epilogue::none;
  const void* bias = nullptr;  // [N] in dt (bias, gelu_bias)
  void* aux = nullptr;         // gelu_bias: pre-activation output, [M, N] with ld_aux
  int ld_aux = 0;
};

// What identifies a plan: everything the heuristic sees.
struct GemmKey {
  DType dt;
  bool trans_a, trans_b;
  int M, N, K, lda, ldb, ldc, batch, ld_aux;
  int64_t stride_a, stride_b, stride_c;
  Epilogue epilogue;
  uint16_t align_a, align_b, align_c;
  bool tf32;
  bool operator==(const GemmKey&) const = default;
};
struct GemmKeyHash {
  size_t operator()(const GemmKey& k) const noexcept;
};
GemmKey make_gemm_key(DType dt, const GemmCall& c, bool tf32);

// cuBLASLt's storage type for a dtype (matrices, bias and aux share it).
cudaDataType_t lt_type(DType dt);

// Largest power of two ≤ 256 dividing the address (what cuBLASLt's alignment
// preferences mean).
uint16_t pointer_alignment(const void* p);

class LtGemm {
 public:
  explicit LtGemm(CachingAllocator& alloc, size_t workspace_bytes = size_t(32) << 20);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // Runs the GEMM. An epilogue cuBLASLt cannot fuse for this shape runs as a
  // separate kernel (bias add, GELU) instead; the result is the same.
  void run(DType dt, const GemmCall& call, cudaStream_t stream);

  void set_allow_tf32(bool on) { allow_tf32_ = on; }
  size_t cached_plans() const;
  uint64_t heuristic_calls() const { return heuristic_calls_; }

 private:
  struct Plan;
  Plan* plan_for(DType dt, const GemmCall& call);

  CachingAllocator& alloc_;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_;
  bool allow_tf32_ = false;
  uint64_t heuristic_calls_ = 0;
  mutable std::mutex mutex_;
  std::unordered_map<GemmKey, std::unique_ptr<Plan>, GemmKeyHash> plans_;
};

}  // namespace hybrid::kernels::cuda
