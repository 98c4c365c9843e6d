#include "engine/comm/nccl_communicator.h"

#include <stdexcept>

#if HYBRID_HAVE_CUDA
#include <mpi.h>

#include <string>
#include <vector>

#include "engine/comm/collective_args.h"
#include "engine/comm/factory.h"
#include "engine/comm/nccl_communicator_impl.h"
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

class NcclHandle final : public Handle {
 public:
  NcclHandle(NcclCommunicator* owner, EventPtr done, cudaStream_t compute, bool host_wait)
      : owner_(owner), done_(std::move(done)), compute_(compute), host_wait_(host_wait) {}

  void wait() override {
    if (host_wait_)
      check_cuda(cudaEventSynchronize(done_.get()), "cudaEventSynchronize");
    else
      check_cuda(cudaStreamWaitEvent(compute_, done_.get(), 0), "cudaStreamWaitEvent(compute)");
    owner_->check_async_error();
    owner_->poll();
  }

  bool ready() const override {
    const cudaError_t q = cudaEventQuery(done_.get());
    if (q == cudaErrorNotReady) return false;
    check_cuda(q, "cudaEventQuery");
    owner_->poll();
    return true;
  }

 private:
  NcclCommunicator* owner_;
  EventPtr done_;
  cudaStream_t compute_;
  bool host_wait_;
};

bool equal(const std::vector<size_t>& counts) {
  for (size_t c : counts)
    if (c != counts[0]) return false;
  return true;
}

}  // namespace

NcclCommunicator::NcclCommunicator(NcclOptions o) : always_grouped_(o.always_grouped) {
  queue_ = std::make_shared<NcclQueue>(o.device, o.compute_stream, o.comm_stream, o.clock);
  try {
    bootstrap(o);
    if (!o.placement.host_of_rank.empty()) set_placement(o.placement);
  } catch (...) {
    release();
    throw;
  }
}

NcclCommunicator::NcclCommunicator(std::shared_ptr<NcclQueue> queue, ncclComm_t comm, int rank,
                                   int size, Placement placement, bool always_grouped)
    : queue_(std::move(queue)),
      comm_(comm),
      rank_(rank),
      world_(size),
      always_grouped_(always_grouped) {
  set_placement(std::move(placement));
}

NcclCommunicator::~NcclCommunicator() {
  try {
    queue_->flush();  // this communicator's records are delivered while it exists
  } catch (...) {
    // Teardown must not throw; records of a failed stream are lost.
  }
  release();
}

void NcclCommunicator::release() noexcept {
  if (comm_) ncclCommDestroy(comm_);
  comm_ = nullptr;
  if (owns_mpi_) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
    owns_mpi_ = false;
  }
}

void NcclCommunicator::bootstrap(const NcclOptions& o) {
  ncclUniqueId id{};
  if (o.bootstrap_broadcast) {
    if (o.rank < 0 || o.world_size < 1 || o.rank >= o.world_size)
      throw std::invalid_argument("NCCL communicator: with bootstrap_broadcast, rank " +
                                  std::to_string(o.rank) + " and world_size " +
                                  std::to_string(o.world_size) + " must be set");
    rank_ = o.rank;
    world_ = o.world_size;
    if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    o.bootstrap_broadcast(&id, sizeof id);
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

template <class Issue>
HandlePtr NcclCommunicator::launch(std::vector<CommRecord> recs, const char* label, bool host_wait,
                                   Issue&& issue) {
  EventPtr end = queue_->launch(
      label, std::move(recs), [this](const CommRecord& r) { notify(r); },
      std::forward<Issue>(issue));
  return std::make_shared<NcclHandle>(this, std::move(end), queue_->compute(), host_wait);
}

void NcclCommunicator::check_async_error() {
  ncclResult_t async = ncclSuccess;
  check_nccl(ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError", comm_);
  check_nccl(async, "asynchronous NCCL error", comm_);
}

bool NcclCommunicator::grouped(const std::vector<size_t>& counts) const {
  return always_grouped_ || !equal(counts);
}

HandlePtr NcclCommunicator::all_reduce_async(void* buf, size_t count, DType dt, ReduceOp op) {
  check_buffer("all_reduce", "buf", buf, count * dtype_size(dt));
  auto rec =
      make_record(CollectiveKind::all_reduce, count * dtype_size(dt), world_, dtype_size(dt));
  return launch({rec}, "nccl:all_reduce", false, [&] {
    if (count)
      check_nccl(ncclAllReduce(buf, buf, count, nccl_type(dt), nccl_op(op), comm_, queue_->comm()),
                 "ncclAllReduce", comm_);
  });
}

HandlePtr NcclCommunicator::reduce_scatter_async(const void* send, void* recv,
                                                 const std::vector<size_t>& counts, DType dt,
                                                 ReduceOp op) {
  check_counts("reduce_scatter", counts, world_);
  const size_t es = dtype_size(dt), total = sum_counts(counts);
  check_buffer("reduce_scatter", "send", send, total * es);
  check_buffer("reduce_scatter", "recv", recv, counts[size_t(rank_)] * es);
  auto rec = make_record(CollectiveKind::reduce_scatter, total * es, world_, es);
  return launch({rec}, "nccl:reduce_scatter", false, [&] {
    if (total == 0) return;
    if (!grouped(counts)) {
      check_nccl(ncclReduceScatter(send, recv, counts[0], nccl_type(dt), nccl_op(op), comm_,
                                   queue_->comm()),
                 "ncclReduceScatter", comm_);
      return;
    }
    // Uneven: rank r is the root of the reduction of its own part.
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < world_; ++r) {
      if (!counts[size_t(r)]) continue;
      const char* part = static_cast<const char*>(send) + part_offset(counts, r) * es;
      check_nccl(ncclReduce(part, recv, counts[size_t(r)], nccl_type(dt), nccl_op(op), r, comm_,
                            queue_->comm()),
                 "ncclReduce", comm_);
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd", comm_);
  });
}

HandlePtr NcclCommunicator::all_gather_async(const void* send, void* recv,
                                             const std::vector<size_t>& counts, DType dt) {
  check_counts("all_gather", counts, world_);
  const size_t es = dtype_size(dt), total = sum_counts(counts);
  check_buffer("all_gather", "send", send, counts[size_t(rank_)] * es);
  check_buffer("all_gather", "recv", recv, total * es);
  auto rec = make_record(CollectiveKind::all_gather, total * es, world_, es);
  return launch({rec}, "nccl:all_gather", false, [&] {
    if (total == 0) return;
    if (!grouped(counts)) {
      check_nccl(ncclAllGather(send, recv, counts[0], nccl_type(dt), comm_, queue_->comm()),
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
          ncclBroadcast(src, slot, counts[size_t(r)], nccl_type(dt), r, comm_, queue_->comm()),
          "ncclBroadcast", comm_);
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd", comm_);
  });
}

HandlePtr NcclCommunicator::broadcast_async(void* buf, size_t bytes, int root) {
  check_root("broadcast", root, world_);
  check_buffer("broadcast", "buf", buf, bytes);
  auto rec = make_record(CollectiveKind::broadcast, bytes, world_, 1);
  return launch({rec}, "nccl:broadcast", false, [&] {
    if (bytes)
      check_nccl(ncclBroadcast(buf, buf, bytes, ncclUint8, root, comm_, queue_->comm()),
                 "ncclBroadcast", comm_);
  });
}

HandlePtr NcclCommunicator::barrier_async() {
  auto rec = make_record(CollectiveKind::barrier, 0, world_, 4);
  float* buf = queue_->barrier_buffer();
  return launch({rec}, "nccl:barrier", true, [&] {
    check_nccl(ncclAllReduce(buf, buf, 1, ncclFloat32, ncclSum, comm_, queue_->comm()),
               "ncclAllReduce(barrier)", comm_);
  });
}

// NCCL has no all-to-all: one ncclSend and ncclRecv per peer in one group
// (its documented recipe), this rank's own block a send to itself.
HandlePtr NcclCommunicator::all_to_all_async(const void* send, void* recv, size_t bytes_per_rank) {
  check_all_to_all(send, recv, bytes_per_rank, world_);
  auto rec = make_record(CollectiveKind::all_to_all, bytes_per_rank * size_t(world_), world_, 1);
  return launch({rec}, "nccl:all_to_all", false, [&] {
    if (!bytes_per_rank) return;
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < world_; ++r) {
      const size_t off = size_t(r) * bytes_per_rank;
      nccl_send(static_cast<const char*>(send) + off, bytes_per_rank, r);
      nccl_recv(static_cast<char*>(recv) + off, bytes_per_rank, r);
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd", comm_);
  });
}

HandlePtr NcclCommunicator::send_async(const void* buf, size_t bytes, int peer) {
  check_peer("send", "peer", peer, world_);
  check_not_self("send", peer, rank_);
  check_buffer("send", "buf", buf, bytes);
  return launch({make_p2p_record(CollectiveKind::send, bytes, peer)}, "nccl:send", false,
                [&] { nccl_send(buf, bytes, peer); });
}

HandlePtr NcclCommunicator::recv_async(void* buf, size_t bytes, int peer) {
  check_peer("recv", "peer", peer, world_);
  check_not_self("recv", peer, rank_);
  check_buffer("recv", "buf", buf, bytes);
  return launch({make_p2p_record(CollectiveKind::recv, bytes, peer)}, "nccl:recv", false,
                [&] { nccl_recv(buf, bytes, peer); });
}

// One ncclGroup, so that both directions progress together.
HandlePtr NcclCommunicator::send_recv_async(const void* send, size_t send_bytes, int dst,
                                            void* recv, size_t recv_bytes, int src) {
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

// 0 bytes: no NCCL call on either side of the pair.
void NcclCommunicator::nccl_send(const void* buf, size_t bytes, int peer) {
  if (bytes)
    check_nccl(ncclSend(buf, bytes, ncclUint8, peer, comm_, queue_->comm()), "ncclSend", comm_);
}

void NcclCommunicator::nccl_recv(void* buf, size_t bytes, int peer) {
  if (bytes)
    check_nccl(ncclRecv(buf, bytes, ncclUint8, peer, comm_, queue_->comm()), "ncclRecv", comm_);
}

std::unique_ptr<Communicator> make_nccl_communicator(NcclOptions options) {
  return std::make_unique<NcclCommunicator>(std::move(options));
}

#endif

}  // namespace hybrid::engine::comm
