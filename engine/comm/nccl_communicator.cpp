#include "engine/comm/nccl_communicator.h"

#include <stdexcept>

#if HYBRID_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "engine/comm/collective_args.h"
#include "engine/comm/completion_handle.h"
#include "engine/comm/factory.h"
#endif

namespace hybrid::engine::comm {

#if !HYBRID_HAVE_CUDA

bool nccl_available_in_build() { return false; }

std::unique_ptr<Communicator> make_nccl_communicator(NcclOptions) {
  throw std::runtime_error(
      "NCCL communicator: this build has no CUDA support (configure with -DHYBRID_CUDA=ON)");
}

#else

bool nccl_available_in_build() { return true; }

namespace {

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("NCCL communicator: ") + what + ": " +
                             cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

void check_nccl(ncclResult_t r, const char* what, ncclComm_t comm = nullptr) {
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

using EventPtr = std::shared_ptr<CUevent_st>;

EventPtr make_event() {
  cudaEvent_t e = nullptr;
  check_cuda(cudaEventCreate(&e), "cudaEventCreate");
  return EventPtr(e, [](cudaEvent_t ev) { cudaEventDestroy(ev); });
}

// An event on the comm stream whose completion time on the host clock is known.
struct Anchor {
  EventPtr event;
  int64_t host_ns = 0;
};

class NcclCommunicator;

class NcclHandle final : public Handle {
 public:
  NcclHandle(NcclCommunicator* owner, EventPtr done, cudaStream_t compute, bool host_wait)
      : owner_(owner), done_(std::move(done)), compute_(compute), host_wait_(host_wait) {}
  void wait() override;
  bool ready() const override;

 private:
  NcclCommunicator* owner_;
  EventPtr done_;
  cudaStream_t compute_;
  bool host_wait_;
};

class NcclCommunicator final : public Communicator {
 public:
  explicit NcclCommunicator(NcclOptions o) : opts_(std::move(o)) {
    if (!opts_.clock) {
      const auto epoch = std::chrono::steady_clock::now();
      opts_.clock = [epoch] {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now() - epoch)
            .count();
      };
    }
    check_cuda(cudaSetDevice(opts_.device), "cudaSetDevice");
    compute_ = static_cast<cudaStream_t>(opts_.compute_stream);
    comm_stream_ = static_cast<cudaStream_t>(opts_.comm_stream);
    if (!comm_stream_) {
      check_cuda(cudaStreamCreateWithFlags(&comm_stream_, cudaStreamNonBlocking),
                 "cudaStreamCreate");
      own_stream_ = true;
    }
    try {
      bootstrap();
      if (!opts_.placement.host_of_rank.empty()) set_placement(opts_.placement);
      check_cuda(cudaMalloc(&barrier_buf_, sizeof(float)), "cudaMalloc(barrier)");
      check_cuda(cudaMemsetAsync(barrier_buf_, 0, sizeof(float), comm_stream_), "cudaMemsetAsync");
      // The first anchor: the one synchronisation, at construction.
      anchor_.event = make_event();
      check_cuda(cudaEventRecord(anchor_.event.get(), comm_stream_), "cudaEventRecord");
      check_cuda(cudaEventSynchronize(anchor_.event.get()), "cudaEventSynchronize");
      anchor_.host_ns = opts_.clock();
    } catch (...) {
      release();
      throw;
    }
  }

  ~NcclCommunicator() override {
    try {
      flush_records();
    } catch (...) {
      // Teardown must not throw; records of a failed stream are lost.
    }
    release();
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  std::string name() const override { return "nccl"; }

  HandlePtr all_reduce_async(void* buf, size_t count, DType dt, ReduceOp op) override {
    check_buffer("all_reduce", "buf", buf, count * dtype_size(dt));
    auto rec =
        make_record(CollectiveKind::all_reduce, count * dtype_size(dt), world_, dtype_size(dt));
    return launch({rec}, "nccl:all_reduce", false, [&] {
      if (count)
        check_nccl(ncclAllReduce(buf, buf, count, nccl_type(dt), nccl_op(op), comm_, comm_stream_),
                   "ncclAllReduce", comm_);
    });
  }

  HandlePtr reduce_scatter_async(const void* send, void* recv, const std::vector<size_t>& counts,
                                 DType dt, ReduceOp op) override {
    check_counts("reduce_scatter", counts, world_);
    const size_t es = dtype_size(dt), total = sum_counts(counts);
    check_buffer("reduce_scatter", "send", send, total * es);
    check_buffer("reduce_scatter", "recv", recv, counts[size_t(rank_)] * es);
    auto rec = make_record(CollectiveKind::reduce_scatter, total * es, world_, es);
    return launch({rec}, "nccl:reduce_scatter", false, [&] {
      if (total == 0) return;
      if (equal(counts)) {
        check_nccl(ncclReduceScatter(send, recv, counts[0], nccl_type(dt), nccl_op(op), comm_,
                                     comm_stream_),
                   "ncclReduceScatter", comm_);
        return;
      }
      // Uneven: rank r is the root of the reduction of its own part.
      check_nccl(ncclGroupStart(), "ncclGroupStart");
      for (int r = 0; r < world_; ++r) {
        if (!counts[size_t(r)]) continue;
        const char* part = static_cast<const char*>(send) + part_offset(counts, r) * es;
        check_nccl(ncclReduce(part, recv, counts[size_t(r)], nccl_type(dt), nccl_op(op), r, comm_,
                              comm_stream_),
                   "ncclReduce", comm_);
      }
      check_nccl(ncclGroupEnd(), "ncclGroupEnd", comm_);
    });
  }

  HandlePtr all_gather_async(const void* send, void* recv, const std::vector<size_t>& counts,
                             DType dt) override {
    check_counts("all_gather", counts, world_);
    const size_t es = dtype_size(dt), total = sum_counts(counts);
    check_buffer("all_gather", "send", send, counts[size_t(rank_)] * es);
    check_buffer("all_gather", "recv", recv, total * es);
    auto rec = make_record(CollectiveKind::all_gather, total * es, world_, es);
    return launch({rec}, "nccl:all_gather", false, [&] {
      if (total == 0) return;
      if (equal(counts)) {
        check_nccl(ncclAllGather(send, recv, counts[0], nccl_type(dt), comm_, comm_stream_),
                   "ncclAllGather", comm_);
        return;
      }
      // Uneven: rank r broadcasts its part into its slot of everyone's recv.
      check_nccl(ncclGroupStart(), "ncclGroupStart");
      for (int r = 0; r < world_; ++r) {
        if (!counts[size_t(r)]) continue;
        char* slot = static_cast<char*>(recv) + part_offset(counts, r) * es;
        const void* src = r == rank_ ? send : slot;
        check_nccl(
            ncclBroadcast(src, slot, counts[size_t(r)], nccl_type(dt), r, comm_, comm_stream_),
            "ncclBroadcast", comm_);
      }
      check_nccl(ncclGroupEnd(), "ncclGroupEnd", comm_);
    });
  }

  HandlePtr broadcast_async(void* buf, size_t bytes, int root) override {
    check_root("broadcast", root, world_);
    check_buffer("broadcast", "buf", buf, bytes);
    auto rec = make_record(CollectiveKind::broadcast, bytes, world_, 1);
    return launch({rec}, "nccl:broadcast", false, [&] {
      if (bytes)
        check_nccl(ncclBroadcast(buf, buf, bytes, ncclUint8, root, comm_, comm_stream_),
                   "ncclBroadcast", comm_);
    });
  }

  HandlePtr barrier_async() override {
    auto rec = make_record(CollectiveKind::barrier, 0, world_, 4);
    return launch({rec}, "nccl:barrier", true, [&] {
      check_nccl(
          ncclAllReduce(barrier_buf_, barrier_buf_, 1, ncclFloat32, ncclSum, comm_, comm_stream_),
          "ncclAllReduce(barrier)", comm_);
    });
  }

  HandlePtr send_async(const void* buf, size_t bytes, int peer) override {
    check_peer("send", "peer", peer, world_);
    check_not_self("send", peer, rank_);
    check_buffer("send", "buf", buf, bytes);
    return launch({make_p2p_record(CollectiveKind::send, bytes, peer)}, "nccl:send", false,
                  [&] { nccl_send(buf, bytes, peer); });
  }

  HandlePtr recv_async(void* buf, size_t bytes, int peer) override {
    check_peer("recv", "peer", peer, world_);
    check_not_self("recv", peer, rank_);
    check_buffer("recv", "buf", buf, bytes);
    return launch({make_p2p_record(CollectiveKind::recv, bytes, peer)}, "nccl:recv", false,
                  [&] { nccl_recv(buf, bytes, peer); });
  }

  // One ncclGroup, so that both directions progress together.
  HandlePtr send_recv_async(const void* send, size_t send_bytes, int dst, void* recv,
                            size_t recv_bytes, int src) override {
    std::vector<CommRecord> recs;
    if (send_bytes) {
      check_peer("send_recv", "dst", dst, world_);
      check_buffer("send_recv", "send", send, send_bytes);
      recs.push_back(make_p2p_record(CollectiveKind::send, send_bytes, dst));
    }
    if (recv_bytes) {
      check_peer("send_recv", "src", src, world_);
      check_buffer("send_recv", "recv", recv, recv_bytes);
      recs.push_back(make_p2p_record(CollectiveKind::recv, recv_bytes, src));
    }
    return launch(std::move(recs), "nccl:send_recv", false, [&] {
      check_nccl(ncclGroupStart(), "ncclGroupStart");
      nccl_send(send, send_bytes, dst);
      nccl_recv(recv, recv_bytes, src);
      check_nccl(ncclGroupEnd(), "ncclGroupEnd", comm_);
    });
  }

  // Waits for the comm stream and delivers every pending CommRecord.
  void flush_records() {
    std::lock_guard lock(mutex_);
    if (comm_stream_) check_cuda(cudaStreamSynchronize(comm_stream_), "cudaStreamSynchronize");
    poll_locked();
  }

  void poll() {
    std::lock_guard lock(mutex_);
    poll_locked();
  }

  void check_async_error() {
    ncclResult_t async = ncclSuccess;
    check_nccl(ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError", comm_);
    check_nccl(async, "asynchronous NCCL error", comm_);
  }

 private:
  struct Pending {
    std::vector<CommRecord> records;  // a send_recv has two
    EventPtr start, end;
    Anchor anchor;
  };

  // 0 bytes: no NCCL call on either side of the pair.
  void nccl_send(const void* buf, size_t bytes, int peer) {
    if (bytes)
      check_nccl(ncclSend(buf, bytes, ncclUint8, peer, comm_, comm_stream_), "ncclSend", comm_);
  }
  void nccl_recv(void* buf, size_t bytes, int peer) {
    if (bytes)
      check_nccl(ncclRecv(buf, bytes, ncclUint8, peer, comm_, comm_stream_), "ncclRecv", comm_);
  }

  static bool equal(const std::vector<size_t>& counts) {
    for (size_t c : counts)
      if (c != counts[0]) return false;
    return true;
  }

  void bootstrap() {
    ncclUniqueId id{};
    if (opts_.bootstrap_broadcast) {
      if (opts_.rank < 0 || opts_.world_size < 1 || opts_.rank >= opts_.world_size)
        throw std::invalid_argument("NCCL communicator: with bootstrap_broadcast, rank " +
                                    std::to_string(opts_.rank) + " and world_size " +
                                    std::to_string(opts_.world_size) + " must be set");
      rank_ = opts_.rank;
      world_ = opts_.world_size;
      if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
      opts_.bootstrap_broadcast(&id, sizeof id);
    } else {
      int initialized = 0, finalized = 0;
      MPI_Initialized(&initialized);
      MPI_Finalized(&finalized);
      if (finalized) throw std::runtime_error("NCCL communicator: MPI was already finalised");
      if (!initialized && launcher_world_size() > 1) {
        int provided = 0;
        if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
          throw std::runtime_error("NCCL communicator: MPI_Init_thread failed");
        owns_mpi_ = true;
        initialized = 1;
      }
      if (initialized) {
        MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
        MPI_Comm_size(MPI_COMM_WORLD, &world_);
        if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
        if (MPI_Bcast(&id, int(sizeof id), MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
          throw std::runtime_error("NCCL communicator: MPI_Bcast of the ncclUniqueId failed");
      } else {
        rank_ = 0;
        world_ = 1;
        check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
      }
    }
    check_nccl(ncclCommInitRank(&comm_, world_, id, rank_), "ncclCommInitRank");
  }

  void release() noexcept {
    if (comm_) ncclCommDestroy(comm_);
    comm_ = nullptr;
    if (barrier_buf_) cudaFree(barrier_buf_);
    barrier_buf_ = nullptr;
    if (own_stream_ && comm_stream_) cudaStreamDestroy(comm_stream_);
    comm_stream_ = nullptr;
    if (owns_mpi_) {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Finalize();
      owns_mpi_ = false;
    }
  }

  template <class Issue>
  HandlePtr launch(std::vector<CommRecord> recs, const char* label, bool host_wait, Issue&& issue) {
    std::lock_guard lock(mutex_);
    for (CommRecord& rec : recs) rec.issue_ns = opts_.clock();
    check_cuda(cudaSetDevice(opts_.device), "cudaSetDevice");
    poll_locked();
    maybe_reanchor_locked();
    nvtxRangePushA(label);
    struct Pop {
      ~Pop() { nvtxRangePop(); }
    } pop;
    // Order after the compute stream's queued work.
    EventPtr ready = make_event();
    check_cuda(cudaEventRecord(ready.get(), compute_), "cudaEventRecord(compute)");
    check_cuda(cudaStreamWaitEvent(comm_stream_, ready.get(), 0), "cudaStreamWaitEvent");
    Pending p{std::move(recs), make_event(), make_event(), anchor_};
    check_cuda(cudaEventRecord(p.start.get(), comm_stream_), "cudaEventRecord(start)");
    issue();
    check_cuda(cudaEventRecord(p.end.get(), comm_stream_), "cudaEventRecord(end)");
    auto handle = std::make_shared<NcclHandle>(this, p.end, compute_, host_wait);
    pending_.push_back(std::move(p));
    return handle;
  }

  // A new anchor when the current one is old (float ms from cudaEventElapsedTime
  // loses resolution over long spans) and the comm stream is idle, so the anchor
  // event completes right after it is recorded.
  void maybe_reanchor_locked() {
    const int64_t now = opts_.clock();
    if (now - anchor_.host_ns < 1'000'000'000 || !pending_.empty()) return;
    Anchor a{make_event(), 0};
    check_cuda(cudaEventRecord(a.event.get(), comm_stream_), "cudaEventRecord(anchor)");
    a.host_ns = opts_.clock();
    anchor_ = std::move(a);
  }

  void poll_locked() {
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
      std::vector<CommRecord> recs = std::move(p.records);
      pending_.pop_front();
      for (CommRecord& r : recs) {
        r.start_ns = std::max(start, r.issue_ns);  // anchor jitter
        r.end_ns = std::max(end, r.start_ns);
        notify(r);
      }
    }
  }

  NcclOptions opts_;
  int rank_ = 0, world_ = 1;
  bool owns_mpi_ = false;
  bool own_stream_ = false;
  cudaStream_t compute_ = nullptr;
  cudaStream_t comm_stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  void* barrier_buf_ = nullptr;
  std::mutex mutex_;
  std::deque<Pending> pending_;
  Anchor anchor_;
};

void NcclHandle::wait() {
  if (host_wait_)
    check_cuda(cudaEventSynchronize(done_.get()), "cudaEventSynchronize");
  else
    check_cuda(cudaStreamWaitEvent(compute_, done_.get(), 0), "cudaStreamWaitEvent(compute)");
  owner_->check_async_error();
  owner_->poll();
}

bool NcclHandle::ready() const {
  const cudaError_t q = cudaEventQuery(done_.get());
  if (q == cudaErrorNotReady) return false;
  check_cuda(q, "cudaEventQuery");
  owner_->poll();
  return true;
}

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(NcclOptions options) {
  return std::make_unique<NcclCommunicator>(std::move(options));
}

#endif

}  // namespace hybrid::engine::comm
