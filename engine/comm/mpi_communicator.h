// Open MPI communicator for CPU ranks.
//
// MPI is initialised here (MPI_THREAD_SERIALIZED, on the constructing thread)
// unless the program did it already, and finalised by the destructor only if it
// was initialised here. After that, every MPI call runs on one communication
// thread owned by this object: the compute thread enqueues a request and gets a
// Handle; the communication thread runs requests in issue order (FIFO), so every
// rank issues the same sequence, and sleeps on a condition variable when idle.
// A failed MPI call or exception fails the request's handle (rethrown by wait());
// argument errors are thrown at issue, on the calling thread.
//
// SERIALIZED allows one thread in MPI at a time, so one MpiCommunicator may
// exist per process at once; a second one is refused. Its groups (split())
// are MPI_Comm_split communicators whose calls go through the same thread and
// queue, so the issue order across the world and its groups is one order.
#pragma once

#include <mpi.h>

#include <atomic>
#include <climits>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/comm/completion_handle.h"
#include "engine/comm/mpi_calls.h"
#include "engine/comm/mpi_collectives.h"
#include "engine/comm/mpi_types.h"

namespace hybrid::engine::comm {

class MpiCommunicator final : public MpiCalls<MpiCommunicator> {
 public:
  // clock: ns for CommRecord times (the tracer's); default: steady clock.
  explicit MpiCommunicator(std::function<int64_t()> clock = {});
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  std::string name() const override { return "mpi"; }

  // The collectives and transfers (MpiCalls) run among the world's ranks.
  std::unique_ptr<Communicator> split(int color, int key) override;

  // Who a collective runs among: the world, or a group made by split().
  struct Group {
    int rank = 0, size = 1;
    const MPI_Comm* comm = nullptr;  // nullptr: the world (read on the communication thread)
    Communicator* owner = nullptr;   // gets the record (counters, observer)
  };
  HandlePtr all_reduce_in(const Group& g, void* buf, size_t count, DType dt, ReduceOp op);
  HandlePtr reduce_scatter_in(const Group& g, const void* send, void* recv,
                              const std::vector<size_t>& counts, DType dt, ReduceOp op);
  HandlePtr all_gather_in(const Group& g, const void* send, void* recv,
                          const std::vector<size_t>& counts, DType dt);
  HandlePtr broadcast_in(const Group& g, void* buf, size_t bytes, int root);
  HandlePtr barrier_in(const Group& g);
  HandlePtr all_to_all_in(const Group& g, const void* send, void* recv, size_t bytes_per_rank);
  // Point-to-point: peers are ranks of g (group ranks for a split group).
  HandlePtr send_in(const Group& g, const void* buf, size_t bytes, int peer);
  HandlePtr recv_in(const Group& g, void* buf, size_t bytes, int peer);
  HandlePtr send_recv_in(const Group& g, const void* send, size_t send_bytes, int dst, void* recv,
                         size_t recv_bytes, int src);

  // Runs fn(comm) on the communication thread after everything issued before it
  // (for MPI work of other components, e.g. an NCCL bootstrap broadcast). No
  // record, no counters. comm is this communicator's duplicate of MPI_COMM_WORLD.
  HandlePtr run_on_comm_thread(std::function<void(MPI_Comm)> fn);

  // Most elements one MPI call carries; larger collectives are split (see
  // mpi_collectives.h). Default INT_MAX (MPI's count type); tests lower it to
  // exercise the split paths with small buffers. Applies to calls issued after.
  void set_chunk_elements(size_t n);
  size_t chunk_elements() const { return chunk_.load(std::memory_order_relaxed); }

  bool owns_mpi() const { return owns_mpi_; }  // initialised MPI, will finalise it

 private:
  struct Request {
    std::function<void(MPI_Comm)> run;
    std::shared_ptr<CompletionHandle> handle;
    // What it books on completion, all with its times (none: untraced); a
    // send_recv books a send and a recv.
    std::vector<CommRecord> records;
    Communicator* owner = nullptr;  // whose notify() books it (traced requests)
  };
  Group world() { return {rank_, world_size_, nullptr, this}; }
  MpiCommunicator& mpi_world() { return *this; }
  Group mpi_group() { return world(); }

  HandlePtr enqueue(Request r);
  HandlePtr enqueue_in(const Group& g, std::vector<CommRecord> records,
                       std::function<void(const MpiContext&)> call);
  void loop(std::promise<void>& started);
  void setup();
  void teardown() noexcept;
  Placement gather_placement();  // collective: on the communication thread, in setup()
  MpiContext context(const Group& g) const;

  std::function<int64_t()> clock_;
  bool owns_mpi_ = false;
  int rank_ = 0;
  int world_size_ = 1;
  std::atomic<size_t> chunk_{size_t(INT_MAX)};

  // Owned by the communication thread once it runs.
  MPI_Comm comm_ = MPI_COMM_NULL;
  MpiTypes types_;

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Request> queue_;
  bool stop_ = false;
  std::thread thread_;
  std::atomic<int> live_groups_{0};
  friend class MpiGroupCommunicator;
  friend class MpiCalls<MpiCommunicator>;
};

}  // namespace hybrid::engine::comm
