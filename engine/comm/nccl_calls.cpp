#if HYBRID_HAVE_CUDA
#include "engine/comm/nccl_calls.h"

#include <stdexcept>
#include <string>

namespace hybrid::engine::comm {

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("NCCL communicator: ") + what + ": " +
                             cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

void check_nccl(ncclResult_t r, const char* what, ncclComm_t comm) {
  if (r == ncclSuccess || r == ncclInProgress) return;
  std::string msg = std::string("NCCL communicator: ") + what + ": " + ncclGetErrorString(r);
  if (const char* last = ncclGetLastError(comm); last && *last)
    msg += " (" + std::string(last) + ")";
  throw std::runtime_error(msg);
}

ncclDataType_t nccl_type(DType dt) {
  switch (dt) {
    case DType::f32:
      return ncclFloat32;
    case DType::f16:
      return ncclFloat16;
    case DType::bf16:
      return ncclBfloat16;
  }
  throw std::invalid_argument("NCCL communicator: invalid dtype");
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return ncclSum;
    case ReduceOp::max:
      return ncclMax;
    case ReduceOp::min:
      return ncclMin;
  }
  throw std::invalid_argument("NCCL communicator: invalid reduce op");
}

EventPtr make_event() {
  cudaEvent_t e = nullptr;
  check_cuda(cudaEventCreate(&e), "cudaEventCreate");
  return EventPtr(e, [](cudaEvent_t ev) { cudaEventDestroy(ev); });
}

}  // namespace hybrid::engine::comm

#endif
