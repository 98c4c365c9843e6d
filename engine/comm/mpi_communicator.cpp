#include "engine/comm/mpi_communicator.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "base/host.h"
#include "engine/comm/collective_args.h"
#include "engine/comm/mpi_point_to_point.h"

namespace hybrid::engine::comm {

namespace {

// SERIALIZED: at most one communication thread per process may call MPI.
std::atomic<bool> g_instance_alive{false};

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE:
      return "MPI_THREAD_MULTIPLE";
  }
  return "unknown";
}

}  // namespace

MpiCommunicator::MpiCommunicator(std::function<int64_t()> clock) : clock_(std::move(clock)) {
  if (!clock_)
    clock_ = [] {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(
                 std::chrono::steady_clock::now().time_since_epoch())
          .count();
    };
  if (g_instance_alive.exchange(true))
    throw std::logic_error(
        "make_mpi_communicator: an MPI communicator already exists in this process (MPI calls are "
        "serialised on its one communication thread); reuse it");
  try {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (finalized)
      throw std::runtime_error("make_mpi_communicator: MPI was already finalised in this process");
    int provided = MPI_THREAD_SINGLE;
    if (!initialized) {
      check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided),
                "MPI_Init_thread");
      owns_mpi_ = true;
    } else {
      check_mpi(MPI_Query_thread(&provided), "MPI_Query_thread");
    }
    if (provided < MPI_THREAD_SERIALIZED)
      throw std::runtime_error(fmt::format(
          "make_mpi_communicator: MPI provides {}, but calls from a communication thread need "
          "MPI_THREAD_SERIALIZED{}",
          thread_level_name(provided),
          owns_mpi_ ? ""
                    : " (initialise MPI with MPI_Init_thread, or let the communicator do it)"));

    std::promise<void> started;
    auto ready = started.get_future();
    thread_ = std::thread([this, &started] { loop(started); });
    ready.get();  // rethrows a setup failure (the thread has then exited)
  } catch (...) {
    if (thread_.joinable()) thread_.join();
    if (owns_mpi_) MPI_Finalize();
    g_instance_alive = false;
    throw;
  }
}

MpiCommunicator::~MpiCommunicator() {
  if (live_groups_.load() > 0) {
    // A group's MPI communicator would be freed after MPI_Finalize: a bug in the caller.
    std::fprintf(stderr,
                 "MpiCommunicator destroyed before %d of its groups (split()); destroy groups "
                 "first\n",
                 live_groups_.load());
    std::abort();
  }
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();  // runs what is still queued, then frees the communicator
  if (owns_mpi_) MPI_Finalize();
  g_instance_alive = false;
}

void MpiCommunicator::setup() {
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
  // Errors come back as codes (then exceptions on the failing handle) rather than abort.
  check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_, &world_size_), "MPI_Comm_size");
  types_.create();
  set_placement(gather_placement());
}

// Every rank's host name and machine id (fixed-width, truncated at 255 bytes),
// in rank order.
Placement MpiCommunicator::gather_placement() {
  auto gather = [&](std::string mine, const char* what) {
    constexpr int kWidth = 256;
    mine.resize(kWidth - 1);
    std::vector<char> all(size_t(kWidth) * size_t(world_size_));
    check_mpi(MPI_Allgather(mine.c_str(), kWidth, MPI_CHAR, all.data(), kWidth, MPI_CHAR, comm_),
              what);
    std::vector<std::string> out;
    for (int r = 0; r < world_size_; ++r) out.emplace_back(&all[size_t(r) * kWidth]);
    return out;
  };
  Placement p;
  p.host_of_rank = gather(base::host_name(), "MPI_Allgather (host names)");
  p.machine_of_rank = gather(base::machine_id(), "MPI_Allgather (machine ids)");
  return p;
}

void MpiCommunicator::teardown() noexcept {
  types_.free();
  int finalized = 1;
  MPI_Finalized(&finalized);  // a program that finalised early leaves nothing to free
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
  comm_ = MPI_COMM_NULL;
}

void MpiCommunicator::loop(std::promise<void>& started) {
  try {
    setup();
  } catch (...) {
    teardown();
    started.set_exception(std::current_exception());
    return;
  }
  started.set_value();

  for (;;) {
    Request req;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) break;  // stopping, and everything issued has run
      req = std::move(queue_.front());
      queue_.pop_front();
    }
    std::exception_ptr error;
    const int64_t start = clock_();
    try {
      req.run(comm_);
    } catch (...) {
      error = std::current_exception();
    }
    const int64_t end = clock_();
    // Counters and observer first, so a finished wait() sees them updated.
    for (CommRecord& rec : req.records) {
      if (error) break;
      rec.start_ns = start;
      rec.end_ns = end;
      try {
        notify_of(req.owner ? *req.owner : *this, rec);
      } catch (...) {
        error = std::current_exception();
      }
    }
    req.handle->complete(error);
  }
  teardown();
}

HandlePtr MpiCommunicator::enqueue(Request r) {
  r.handle = std::make_shared<CompletionHandle>();
  HandlePtr h = r.handle;
  const int64_t now = clock_();
  for (CommRecord& rec : r.records) rec.issue_ns = now;
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(r));
  }
  cv_.notify_one();
  return h;
}

MpiContext MpiCommunicator::context(const Group& g) const {
  MpiContext c;
  c.rank = g.rank;
  c.world_size = g.size;
  c.types = &types_;
  c.chunk = chunk_elements();
  return c;
}

void MpiCommunicator::set_chunk_elements(size_t n) {
  if (n == 0 || n > size_t(INT_MAX))
    throw std::invalid_argument(
        fmt::format("mpi: chunk_elements must be in 1..{} (MPI's int counts), got {}", INT_MAX, n));
  chunk_.store(n, std::memory_order_relaxed);
}

namespace {

// The group's communicator, or the world's the thread passes in.
MPI_Comm comm_of(const MPI_Comm* group, MPI_Comm world) { return group ? *group : world; }

}  // namespace

// Every collective and transfer: `call` on the communication thread with the
// group's context, its records booked to the group's owner.
HandlePtr MpiCommunicator::enqueue_in(const Group& g, std::vector<CommRecord> records,
                                      std::function<void(const MpiContext&)> call) {
  Request r;
  r.owner = g.owner;
  r.records = std::move(records);
  r.run = [c = context(g), group = g.comm, call = std::move(call)](MPI_Comm comm) mutable {
    c.comm = comm_of(group, comm);
    call(c);
  };
  return enqueue(std::move(r));
}

HandlePtr MpiCommunicator::all_reduce_in(const Group& g, void* buf, size_t count, DType dt,
                                         ReduceOp op) {
  check_buffer("all_reduce", "buf", buf, count * dtype_size(dt));
  return enqueue_in(
      g, {make_record(CollectiveKind::all_reduce, count * dtype_size(dt), g.size, dtype_size(dt))},
      [=](const MpiContext& c) { mpi_all_reduce(c, buf, count, dt, op); });
}

HandlePtr MpiCommunicator::reduce_scatter_in(const Group& g, const void* send, void* recv,
                                             const std::vector<size_t>& counts, DType dt,
                                             ReduceOp op) {
  check_counts("reduce_scatter", counts, g.size);
  const size_t es = dtype_size(dt);
  check_buffer("reduce_scatter", "send", send, sum_counts(counts) * es);
  check_buffer("reduce_scatter", "recv", recv, counts[size_t(g.rank)] * es);
  return enqueue_in(
      g, {make_record(CollectiveKind::reduce_scatter, sum_counts(counts) * es, g.size, es)},
      [=](const MpiContext& c) { mpi_reduce_scatter(c, send, recv, counts, dt, op); });
}

HandlePtr MpiCommunicator::all_gather_in(const Group& g, const void* send, void* recv,
                                         const std::vector<size_t>& counts, DType dt) {
  check_counts("all_gather", counts, g.size);
  const size_t es = dtype_size(dt);
  const size_t total = sum_counts(counts), mine = counts[size_t(g.rank)];
  check_buffer("all_gather", "send", send, mine * es);
  check_buffer("all_gather", "recv", recv, total * es);
  const void* slot = static_cast<const std::byte*>(recv) + part_offset(counts, g.rank) * es;
  if (send != slot && ranges_overlap(send, mine * es, recv, total * es))
    throw std::invalid_argument(
        "all_gather: send overlaps recv but is not this rank's slot in it (only exact in-place "
        "aliasing is allowed)");
  return enqueue_in(g, {make_record(CollectiveKind::all_gather, total * es, g.size, es)},
                    [=](const MpiContext& c) { mpi_all_gather(c, send, recv, counts, dt); });
}

HandlePtr MpiCommunicator::broadcast_in(const Group& g, void* buf, size_t bytes, int root) {
  check_root("broadcast", root, g.size);
  check_buffer("broadcast", "buf", buf, bytes);
  return enqueue_in(g, {make_record(CollectiveKind::broadcast, bytes, g.size, 1)},
                    [=](const MpiContext& c) { mpi_broadcast(c, buf, bytes, root); });
}

HandlePtr MpiCommunicator::barrier_in(const Group& g) {
  return enqueue_in(g, {make_record(CollectiveKind::barrier, 0, g.size, 1)},
                    [](const MpiContext& c) { mpi_barrier(c); });
}

HandlePtr MpiCommunicator::all_to_all_in(const Group& g, const void* send, void* recv,
                                         size_t bytes_per_rank) {
  check_all_to_all(send, recv, bytes_per_rank, g.size);
  return enqueue_in(
      g, {make_record(CollectiveKind::all_to_all, bytes_per_rank * size_t(g.size), g.size, 1)},
      [=](const MpiContext& c) { mpi_all_to_all(c, send, recv, bytes_per_rank); });
}

HandlePtr MpiCommunicator::send_in(const Group& g, const void* buf, size_t bytes, int peer) {
  check_peer("send", "peer", peer, g.size);
  check_not_self("send", peer, g.rank);
  check_buffer("send", "buf", buf, bytes);
  return enqueue_in(g, {make_p2p_record(CollectiveKind::send, bytes, peer)},
                    [=](const MpiContext& c) { mpi_send(c, buf, bytes, peer); });
}

HandlePtr MpiCommunicator::recv_in(const Group& g, void* buf, size_t bytes, int peer) {
  check_peer("recv", "peer", peer, g.size);
  check_not_self("recv", peer, g.rank);
  check_buffer("recv", "buf", buf, bytes);
  return enqueue_in(g, {make_p2p_record(CollectiveKind::recv, bytes, peer)},
                    [=](const MpiContext& c) { mpi_recv(c, buf, bytes, peer); });
}

HandlePtr MpiCommunicator::send_recv_in(const Group& g, const void* send, size_t send_bytes,
                                        int dst, void* recv, size_t recv_bytes, int src) {
  std::vector<CommRecord> records;
  if (send_bytes) {
    check_peer("send_recv", "dst", dst, g.size);
    check_buffer("send_recv", "send", send, send_bytes);
    records.push_back(make_p2p_record(CollectiveKind::send, send_bytes, dst));
  }
  if (recv_bytes) {
    check_peer("send_recv", "src", src, g.size);
    check_buffer("send_recv", "recv", recv, recv_bytes);
    if (ranges_overlap(send, send_bytes, recv, recv_bytes))
      throw std::invalid_argument("send_recv: send and recv overlap (MPI forbids it)");
    records.push_back(make_p2p_record(CollectiveKind::recv, recv_bytes, src));
  }
  return enqueue_in(g, std::move(records), [=](const MpiContext& c) {
    mpi_send_recv(c, send, send_bytes, dst, recv, recv_bytes, src);
  });
}

HandlePtr MpiCommunicator::run_on_comm_thread(std::function<void(MPI_Comm)> fn) {
  if (!fn) throw std::invalid_argument("run_on_comm_thread: empty function");
  Request r;
  r.run = std::move(fn);
  return enqueue(std::move(r));
}

std::unique_ptr<Communicator> make_mpi_communicator(std::function<int64_t()> clock) {
  return std::make_unique<MpiCommunicator>(std::move(clock));
}

}  // namespace hybrid::engine::comm
