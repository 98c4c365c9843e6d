// CudaBackend's host memory and asynchronous host transfers, for the
// offloaded optimizer (engine/zero/optimizer_offload.h).
//
// Design: one copy stream, separate from compute and from NCCL's comm stream,
// so that the D2H of gradient chunk k+1 and the H2D of parameter chunk k-1 run
// while the host computes AdamW on chunk k. Each transfer
//   1. records an event on the compute stream and makes the copy stream wait on
//      it (the copy sees every kernel queued before it: gradients reduced,
//      parameters no longer read),
//   2. queues cudaMemcpyAsync on the copy stream and re-records the event
//      there (a wait captures an event's state when it is issued, so one event
//      serves both purposes),
//   3. for H2D only, makes the compute stream wait on it, so later kernels
//      (the parameter all-gather, the next forward) see the new values
//      without the host blocking.
// The ticket names the event; wait_transfer blocks the host until the copy is
// done and returns the event to a spare list. Host buffers must come from
// allocate_host (page-locked): from pageable memory cudaMemcpyAsync degrades to
// a synchronous copy, still correct.
#include <string>

#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_check.h"

namespace hybrid::kernels {

void* CudaBackend::allocate_host(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  const cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw BackendOutOfMemory("out of memory: cudaHostAlloc cannot pin " +
                                 cuda::format_byte_size(bytes) + " of host memory (" +
                                 std::to_string(bytes) + " bytes) for " + name_,
                             bytes);
  }
  HYBRID_CUDA_CHECK(e);
  return p;
}

void CudaBackend::free_host(void* ptr, size_t) {
  if (ptr) cudaFreeHost(ptr);
}

uint64_t CudaBackend::queue_transfer(void* dst, const void* src, size_t bytes,
                                     cudaMemcpyKind kind) {
  if (bytes == 0) return 0;
  if (!copy_) HYBRID_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
  cudaEvent_t ev = nullptr;
  if (!spare_events_.empty()) {
    ev = spare_events_.back();
    spare_events_.pop_back();
  } else {
    HYBRID_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  }
  try {
    HYBRID_CUDA_CHECK(cudaEventRecord(ev, compute_));
    HYBRID_CUDA_CHECK(cudaStreamWaitEvent(copy_, ev, 0));
    HYBRID_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, copy_));
    HYBRID_CUDA_CHECK(cudaEventRecord(ev, copy_));
    if (kind == cudaMemcpyHostToDevice) HYBRID_CUDA_CHECK(cudaStreamWaitEvent(compute_, ev, 0));
  } catch (...) {
    spare_events_.push_back(ev);
    throw;
  }
  const uint64_t ticket = next_ticket_++;
  transfers_.emplace(ticket, ev);
  return ticket;
}

uint64_t CudaBackend::copy_to_host_async(void* host_dst, const void* src, size_t bytes) {
  return queue_transfer(host_dst, src, bytes, cudaMemcpyDeviceToHost);
}

uint64_t CudaBackend::copy_from_host_async(void* dst, const void* host_src, size_t bytes) {
  return queue_transfer(dst, host_src, bytes, cudaMemcpyHostToDevice);
}

void CudaBackend::wait_transfer(uint64_t ticket) {
  const auto it = transfers_.find(ticket);
  if (it == transfers_.end()) return;  // 0, or already waited for
  const cudaEvent_t ev = it->second;
  transfers_.erase(it);
  spare_events_.push_back(ev);
  HYBRID_CUDA_CHECK(cudaEventSynchronize(ev));
}

void CudaBackend::release_transfer_resources() noexcept {
  if (copy_) cudaStreamSynchronize(copy_);
  for (auto& [ticket, ev] : transfers_) cudaEventDestroy(ev);
  transfers_.clear();
  for (cudaEvent_t ev : spare_events_) cudaEventDestroy(ev);
  spare_events_.clear();
  if (copy_) cudaStreamDestroy(copy_);
  copy_ = nullptr;
}

}  // namespace hybrid::kernels
