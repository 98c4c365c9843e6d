#if HYBRID_HAVE_CUDA
#include "engine/comm/nccl_queue.h"

#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <chrono>

namespace hybrid::engine::comm {

NcclQueue::NvtxRange::NvtxRange(const char* label) { nvtxRangePushA(label); }
NcclQueue::NvtxRange::~NvtxRange() { nvtxRangePop(); }

NcclQueue::NcclQueue(int device, void* compute_stream, void* comm_stream, Clock clock)
    : device_(device), clock_(std::move(clock)) {
  if (!clock_) {
    const auto epoch = std::chrono::steady_clock::now();
    clock_ = [epoch] {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                  epoch)
          .count();
    };
  }
  check_cuda(cudaSetDevice(device_), "cudaSetDevice");
  compute_ = static_cast<cudaStream_t>(compute_stream);
  comm_ = static_cast<cudaStream_t>(comm_stream);
  try {
    if (!comm_) {
      check_cuda(cudaStreamCreateWithFlags(&comm_, cudaStreamNonBlocking), "cudaStreamCreate");
      own_stream_ = true;
    }
    check_cuda(cudaMalloc(&barrier_buf_, sizeof(float)), "cudaMalloc(barrier)");
    check_cuda(cudaMemsetAsync(barrier_buf_, 0, sizeof(float), comm_), "cudaMemsetAsync");
    // The first anchor: the one synchronisation, at construction.
    anchor_.event = make_event();
    check_cuda(cudaEventRecord(anchor_.event.get(), comm_), "cudaEventRecord");
    check_cuda(cudaEventSynchronize(anchor_.event.get()), "cudaEventSynchronize");
    anchor_.host_ns = clock_();
  } catch (...) {
    release();
    throw;
  }
}

NcclQueue::~NcclQueue() { release(); }

void NcclQueue::release() noexcept {
  if (barrier_buf_) cudaFree(barrier_buf_);
  barrier_buf_ = nullptr;
  if (own_stream_ && comm_) cudaStreamDestroy(comm_);
  comm_ = nullptr;
}

NcclQueue::Pending NcclQueue::begin_locked(std::vector<CommRecord> records, Deliver deliver) {
  for (CommRecord& rec : records) rec.issue_ns = clock_();
  check_cuda(cudaSetDevice(device_), "cudaSetDevice");
  poll_locked();
  maybe_reanchor_locked();
  // Order after the compute stream's queued work.
  EventPtr ready = make_event();
  check_cuda(cudaEventRecord(ready.get(), compute_), "cudaEventRecord(compute)");
  check_cuda(cudaStreamWaitEvent(comm_, ready.get(), 0), "cudaStreamWaitEvent");
  Pending p{std::move(records), std::move(deliver), make_event(), make_event(), anchor_};
  check_cuda(cudaEventRecord(p.start.get(), comm_), "cudaEventRecord(start)");
  return p;
}

EventPtr NcclQueue::end_locked(Pending p) {
  check_cuda(cudaEventRecord(p.end.get(), comm_), "cudaEventRecord(end)");
  EventPtr end = p.end;
  pending_.push_back(std::move(p));
  return end;
}

void NcclQueue::run_and_wait(const std::function<void(cudaStream_t)>& fn) {
  std::lock_guard lock(mutex_);
  check_cuda(cudaSetDevice(device_), "cudaSetDevice");
  fn(comm_);
  check_cuda(cudaStreamSynchronize(comm_), "cudaStreamSynchronize");
  poll_locked();
}

void NcclQueue::poll() {
  std::lock_guard lock(mutex_);
  poll_locked();
}

void NcclQueue::flush() {
  std::lock_guard lock(mutex_);
  if (comm_) check_cuda(cudaStreamSynchronize(comm_), "cudaStreamSynchronize");
  poll_locked();
}

// A new anchor when the current one is old (float ms from cudaEventElapsedTime
// loses resolution over long spans) and the comm stream is idle, so the anchor
// event completes right after it is recorded.
void NcclQueue::maybe_reanchor_locked() {
  const int64_t now = clock_();
  if (now - anchor_.host_ns < 1'000'000'000 || !pending_.empty()) return;
  Anchor a{make_event(), 0};
  check_cuda(cudaEventRecord(a.event.get(), comm_), "cudaEventRecord(anchor)");
  a.host_ns = clock_();
  anchor_ = std::move(a);
}

void NcclQueue::poll_locked() {
  while (!pending_.empty()) {
    Pending& p = pending_.front();
    const cudaError_t q = cudaEventQuery(p.end.get());
    if (q == cudaErrorNotReady) return;
    check_cuda(q, "cudaEventQuery");
    float ms_start = 0.0f, ms_end = 0.0f;
    check_cuda(cudaEventElapsedTime(&ms_start, p.anchor.event.get(), p.start.get()),
               "cudaEventElapsedTime");
    check_cuda(cudaEventElapsedTime(&ms_end, p.anchor.event.get(), p.end.get()),
               "cudaEventElapsedTime");
    const int64_t start = p.anchor.host_ns + int64_t(double(ms_start) * 1e6);
    const int64_t end = p.anchor.host_ns + int64_t(double(ms_end) * 1e6);
    Pending done = std::move(p);
    pending_.pop_front();
    for (CommRecord& r : done.records) {
      r.start_ns = std::max(start, r.issue_ns);  // anchor jitter
      r.end_ns = std::max(end, r.start_ns);
      if (done.deliver) done.deliver(r);
    }
  }
}

}  // namespace hybrid::engine::comm

#endif
