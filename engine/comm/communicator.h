// One interface for every collective the engine issues. Implementations: a
// single-process one (world size 1), Open MPI (CPU ranks, one communication
// thread), and NCCL (GPU ranks, bootstrapped over MPI; the CUDA issue).
//
// Every call is asynchronous underneath: the *_async variants return a Handle
// that the caller waits on; the plain variants are async + wait. Buffers must stay
// alive and untouched until the handle completes. Calls are executed in issue
// order on every rank, as MPI and NCCL require.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/comm/placement.h"
#include "kernels/dtype.h"
#include "profiler/comm_record.h"

namespace hybrid::engine::comm {

using kernels::DType;

enum class ReduceOp { sum, max, min };

using profiler::CollectiveKind;
using profiler::CommRecord;

class Handle {
 public:
  virtual ~Handle() = default;
  virtual void wait() = 0;         // blocks until complete; rethrows a failure
  virtual bool ready() const = 0;  // non-blocking test
};
using HandlePtr = std::shared_ptr<Handle>;

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual std::string name() const = 0;  // "single", "mpi", "nccl"
  // The host of each rank; every collective is booked under placement().link().
  const Placement& placement() const { return placement_; }

  // In place over `count` elements of `buf`.
  virtual HandlePtr all_reduce_async(void* buf, size_t count, DType dt, ReduceOp op) = 0;
  // send: concatenation of every rank's part in rank order (Σ counts elements);
  // recv: this rank's part, counts[rank] elements. Counts may differ and be 0.
  virtual HandlePtr reduce_scatter_async(const void* send, void* recv,
                                         const std::vector<size_t>& counts, DType dt,
                                         ReduceOp op) = 0;
  // send: this rank's counts[rank] elements; recv: all parts in rank order.
  // send may alias its own slot inside recv.
  virtual HandlePtr all_gather_async(const void* send, void* recv,
                                     const std::vector<size_t>& counts, DType dt) = 0;
  virtual HandlePtr broadcast_async(void* buf, size_t bytes, int root) = 0;
  virtual HandlePtr barrier_async() = 0;
  // send: world_size() blocks of `bytes_per_rank` bytes, block j for rank j;
  // recv: world_size() blocks, block i from rank i. Untyped (bytes), since what
  // it carries need not be a DType: the compressed all-reduce's packed signs.
  // send and recv must not overlap (std::invalid_argument). Booked as one
  // `all_to_all` record of world × bytes_per_rank bytes (nccl-tests' size).
  virtual HandlePtr all_to_all_async(const void* send, void* recv, size_t bytes_per_rank) = 0;

  void all_reduce(void* buf, size_t count, DType dt, ReduceOp op) {
    all_reduce_async(buf, count, dt, op)->wait();
  }
  void reduce_scatter(const void* send, void* recv, const std::vector<size_t>& counts, DType dt,
                      ReduceOp op) {
    reduce_scatter_async(send, recv, counts, dt, op)->wait();
  }
  void all_gather(const void* send, void* recv, const std::vector<size_t>& counts, DType dt) {
    all_gather_async(send, recv, counts, dt)->wait();
  }
  void broadcast(void* buf, size_t bytes, int root) { broadcast_async(buf, bytes, root)->wait(); }
  void barrier() { barrier_async()->wait(); }
  void all_to_all(const void* send, void* recv, size_t bytes_per_rank) {
    all_to_all_async(send, recv, bytes_per_rank)->wait();
  }

  // Point-to-point (pipeline stages). `peer` is a rank of this communicator.
  // Each pair of ranks must issue matching calls in the same order (MPI's
  // non-overtaking order), with the same byte count on both sides (a 0-byte
  // send still meets a 0-byte recv). A peer out of range is
  // std::invalid_argument; a lone send or recv to this rank itself, which
  // could never be matched, std::logic_error. Booked as one `send` or `recv`
  // record carrying the peer and the pair's link class.
  virtual HandlePtr send_async(const void* /*buf*/, size_t /*bytes*/, int /*peer*/) {
    throw std::logic_error(name() + ": point-to-point send is not implemented");
  }
  virtual HandlePtr recv_async(void* /*buf*/, size_t /*bytes*/, int /*peer*/) {
    throw std::logic_error(name() + ": point-to-point recv is not implemented");
  }
  // Sends `send_bytes` to `dst` and receives `recv_bytes` from `src` at once, so
  // that neighbours exchanging in opposite directions cannot deadlock. Either
  // side may be 0 bytes: that side sends nothing, books nothing and its peer
  // is not looked at, so the call is a plain send or recv (the end stages of a
  // pipeline). Books a `send` and a `recv` record sharing one interval.
  virtual HandlePtr send_recv_async(const void* /*send*/, size_t /*send_bytes*/, int /*dst*/,
                                    void* /*recv*/, size_t /*recv_bytes*/, int /*src*/) {
    throw std::logic_error(name() + ": point-to-point send_recv is not implemented");
  }
  void send(const void* buf, size_t bytes, int peer) { send_async(buf, bytes, peer)->wait(); }
  void recv(void* buf, size_t bytes, int peer) { recv_async(buf, bytes, peer)->wait(); }
  void send_recv(const void* send, size_t send_bytes, int dst, void* recv, size_t recv_bytes,
                 int src) {
    send_recv_async(send, send_bytes, dst, recv, recv_bytes, src)->wait();
  }

  // A communicator over the ranks that pass the same `color` (>= 0), ranked by
  // `key` (ties: by rank here). Collective: every rank calls it, in the same
  // order as its other collectives. The group issues through this
  // communicator (same thread, same order) and must be destroyed before it;
  // its records carry its own size and its ranks' link class.
  virtual std::unique_ptr<Communicator> split(int /*color*/, int /*key*/) {
    throw std::logic_error(name() + ": split into groups is not implemented");
  }

  // Called on completion of every collective, from the communication thread.
  // The comm tracer installs itself here; nothing synchronises for it.
  using Observer = std::function<void(const CommRecord&)>;
  void set_observer(Observer obs) { observer_ = std::move(obs); }

  // Which group this communicator serves ("world", "dp", "pp", "tied", "tp"),
  // stamped into every record it notifies so reports can split by group. Set
  // before the first collective; an empty label is std::invalid_argument.
  void set_group_label(std::string label) {
    if (label.empty()) throw std::invalid_argument("communicator group label must not be empty");
    group_label_ = std::move(label);
  }
  const std::string& group_label() const { return group_label_; }

  // Calls and bytes so far per kind (message sizes as in CollectiveRecord); a
  // snapshot, safe to take while collectives are in flight.
  struct Counters {
    uint64_t calls[profiler::kCollectiveKindCount] = {};
    uint64_t bytes[profiler::kCollectiveKindCount] = {};
    uint64_t total_bytes() const {
      uint64_t t = 0;
      for (uint64_t b : bytes) t += b;
      return t;
    }
    Counters& operator+=(const Counters& o) {
      for (int k = 0; k < profiler::kCollectiveKindCount; ++k)
        calls[k] += o.calls[k], bytes[k] += o.bytes[k];
      return *this;
    }
  };
  Counters counters() const {
    Counters c;
    for (int k = 0; k < profiler::kCollectiveKindCount; ++k) {
      c.calls[k] = calls_[k].load(std::memory_order_relaxed);
      c.bytes[k] = bytes_[k].load(std::memory_order_relaxed);
    }
    return c;
  }
  void reset_counters() {
    for (int k = 0; k < profiler::kCollectiveKindCount; ++k) calls_[k] = 0, bytes_[k] = 0;
  }

 protected:
  // For a communicator that completes a group's collectives (split()).
  static void notify_of(Communicator& c, const CommRecord& r) { c.notify(r); }
  // Implementations call this once per completed collective.
  void notify(const CommRecord& r) {
    calls_[int(r.kind)].fetch_add(1, std::memory_order_relaxed);
    bytes_[int(r.kind)].fetch_add(r.bytes, std::memory_order_relaxed);
    if (!observer_) return;
    CommRecord stamped = r;
    // A point-to-point record joins two ranks: its link is the pair's, not the group's.
    stamped.link = r.peer >= 0 ? pair_link(r.peer) : link_;
    stamped.group = group_label_;
    observer_(stamped);
  }
  profiler::LinkClass pair_link(int peer) const {
    return placement_.same_host(rank(), peer) ? profiler::LinkClass::intra_host
                                              : profiler::LinkClass::inter_host;
  }
  // Once, before the first collective (implementations gather it at creation).
  void set_placement(Placement p) {
    placement_ = std::move(p);
    link_ = placement_.link();
  }

 private:
  Placement placement_;
  profiler::LinkClass link_ = profiler::LinkClass::intra_host;
  std::string group_label_ = "world";
  Observer observer_;
  std::atomic<uint64_t> calls_[profiler::kCollectiveKindCount] = {};
  std::atomic<uint64_t> bytes_[profiler::kCollectiveKindCount] = {};
};

// World size 1: every collective is a copy or nothing, completed at once.
// `clock` (ns) stamps its CommRecords, as for the MPI communicator.
std::unique_ptr<Communicator> make_single_communicator(std::function<int64_t()> clock = {});

// Open MPI. Initialises MPI (MPI_THREAD_SERIALIZED) if needed; all MPI calls run
// on one communication thread. `clock` gives the tracer's time base in ns.
std::unique_ptr<Communicator> make_mpi_communicator(std::function<int64_t()> clock = {});

// True when this process was started by mpirun/srun with more than one rank.
bool launched_with_multiple_ranks();

}  // namespace hybrid::engine::comm
