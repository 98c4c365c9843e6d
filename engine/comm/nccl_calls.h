// The CUDA and NCCL calls the NCCL communicator and its groups share: errors
// that name the failing call, the type and op mappings, and events owned by a
// shared_ptr. CUDA builds only (include it under HYBRID_HAVE_CUDA).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>

#include "engine/comm/communicator.h"

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 18, 0)
#error "the NCCL communicator's groups need ncclCommSplit (NCCL 2.18 or newer)"
#endif

namespace hybrid::engine::comm {

// std::runtime_error "NCCL communicator: <what>: <CUDA's name and message>".
void check_cuda(cudaError_t e, const char* what);
// The same for NCCL, with ncclGetLastError's detail; ncclInProgress is success.
void check_nccl(ncclResult_t r, const char* what, ncclComm_t comm = nullptr);

ncclDataType_t nccl_type(DType dt);
ncclRedOp_t nccl_op(ReduceOp op);

using EventPtr = std::shared_ptr<CUevent_st>;
EventPtr make_event();

}  // namespace hybrid::engine::comm
