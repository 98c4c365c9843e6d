// What an NCCL world communicator and the groups split from it share: the
// device, the compute and communication streams, the clock, a scratch float for
// barriers, and the records of the collectives in flight. Every collective of
// the world or of any group is queued on the one communication stream, in
// issue order, after the work already queued on the compute stream; its record
// is delivered (to the communicator that issued it) once its end event is
// found complete, so records arrive in issue order whichever group issued them.
//
// Times come from CUDA events, converted to the caller's clock through an
// anchor event whose host time is known (re-anchored when the stream is idle);
// no synchronisation is added for tracing. CUDA builds only.
#pragma once

#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "engine/comm/nccl_calls.h"

namespace hybrid::engine::comm {

class NcclQueue {
 public:
  using Clock = std::function<int64_t()>;
  using Deliver = std::function<void(const CommRecord&)>;

  // compute_stream, comm_stream: cudaStream_t values; a null comm stream is
  // created here (and destroyed with the queue). Null clock: steady clock.
  NcclQueue(int device, void* compute_stream, void* comm_stream, Clock clock);
  ~NcclQueue();
  NcclQueue(const NcclQueue&) = delete;
  NcclQueue& operator=(const NcclQueue&) = delete;

  int device() const { return device_; }
  cudaStream_t compute() const { return compute_; }
  cudaStream_t comm() const { return comm_; }
  float* barrier_buffer() const { return barrier_buf_; }
  int64_t now() const { return clock_(); }

  // Queues issue() on the comm stream between a start and an end event, after
  // the compute stream's queued work, inside an NVTX range named `label`;
  // `records` (issue times set here) go to `deliver` when the end event
  // completes. Returns the end event.
  template <class Issue>
  EventPtr launch(const char* label, std::vector<CommRecord> records, Deliver deliver,
                  Issue&& issue) {
    std::lock_guard lock(mutex_);
    Pending p = begin_locked(std::move(records), std::move(deliver));
    const NvtxRange range(label);
    issue();
    return end_locked(std::move(p));
  }

  // Runs fn on the comm stream after everything queued, untraced, and waits for
  // it on the host (a group's set-up: ncclCommSplit and its membership).
  void run_and_wait(const std::function<void(cudaStream_t)>& fn);

  void poll();   // delivers the records of completed collectives
  void flush();  // waits for the comm stream, then delivers every record

 private:
  struct Anchor {  // an event on the comm stream whose completion time on the clock is known
    EventPtr event;
    int64_t host_ns = 0;
  };
  struct NvtxRange {
    explicit NvtxRange(const char* label);
    ~NvtxRange();
  };
  struct Pending {
    std::vector<CommRecord> records;  // a send_recv has two
    Deliver deliver;
    EventPtr start, end;
    Anchor anchor;
  };

  Pending begin_locked(std::vector<CommRecord> records, Deliver deliver);
  EventPtr end_locked(Pending p);
  void maybe_reanchor_locked();
  void poll_locked();
  void release() noexcept;

  int device_;
  Clock clock_;
  cudaStream_t compute_ = nullptr;
  cudaStream_t comm_ = nullptr;
  bool own_stream_ = false;
  float* barrier_buf_ = nullptr;
  std::mutex mutex_;
  std::deque<Pending> pending_;
  Anchor anchor_;
};

}  // namespace hybrid::engine::comm
