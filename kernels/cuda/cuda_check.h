// Error checking for CUDA runtime, cuBLASLt calls: every failure becomes an
// exception naming the call, the file:line and the library's own message.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace hybrid::kernels::cuda {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void throw_cuda_error(cudaError_t e, const char* what, const char* file,
                                          int line) {
  throw CudaError(std::string("CUDA error in ") + what + " (" + file + ":" + std::to_string(line) +
                  "): " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

[[noreturn]] inline void throw_cublas_error(cublasStatus_t s, const char* what, const char* file,
                                            int line) {
  throw CudaError(std::string("cuBLASLt error in ") + what + " (" + file + ":" +
                  std::to_string(line) + "): " + cublasLtGetStatusName(s) + ": " +
                  cublasLtGetStatusString(s));
}

}  // namespace hybrid::kernels::cuda

#define HYBRID_CUDA_CHECK(call)                                                          \
  do {                                                                                   \
    cudaError_t hybrid_err_ = (call);                                                    \
    if (hybrid_err_ != cudaSuccess)                                                      \
      ::hybrid::kernels::cuda::throw_cuda_error(hybrid_err_, #call, __FILE__, __LINE__); \
  } while (0)

#define HYBRID_CUBLAS_CHECK(call)                                                         \
  do {                                                                                    \
    cublasStatus_t hybrid_st_ = (call);                                                   \
    if (hybrid_st_ != CUBLAS_STATUS_SUCCESS)                                              \
      ::hybrid::kernels::cuda::throw_cublas_error(hybrid_st_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: catches bad launch configurations at once (asynchronous
// faults surface at the next synchronising call).
#define HYBRID_CUDA_CHECK_LAUNCH() HYBRID_CUDA_CHECK(cudaGetLastError())
