// World size 1: all-reduce and barrier have nothing to do, reduce-scatter and
// all-gather are one copy (none when input and output are the same memory),
// all-to-all one copy.
// Point-to-point has only itself as peer: send_recv to itself is a copy, a lone
// send or recv could never be matched and is refused. Every call still produces a CommRecord, so
// counters and the tracer see a single-process run the way they see a distributed one.
#include <chrono>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include "base/host.h"
#include "engine/comm/collective_args.h"
#include "engine/comm/communicator.h"
#include "engine/comm/completion_handle.h"

namespace hybrid::engine::comm {

namespace {

class SingleCommunicator final : public Communicator {
 public:
  explicit SingleCommunicator(std::function<int64_t()> clock) : clock_(std::move(clock)) {
    if (!clock_)
      clock_ = [] {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
      };
    set_placement({{base::host_name()}, {base::machine_id()}});
  }

  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  std::string name() const override { return "single"; }

  std::unique_ptr<Communicator> split(int color, int) override {
    check_color(color);
    return std::make_unique<SingleCommunicator>(clock_);
  }

  HandlePtr all_reduce_async(void* buf, size_t count, DType dt, ReduceOp) override {
    check_buffer("all_reduce", "buf", buf, count * dtype_size(dt));
    return run(CollectiveKind::all_reduce, count * dtype_size(dt), dtype_size(dt), [] {});
  }

  HandlePtr reduce_scatter_async(const void* send, void* recv, const std::vector<size_t>& counts,
                                 DType dt, ReduceOp) override {
    check_counts("reduce_scatter", counts, 1);
    const size_t bytes = counts[0] * dtype_size(dt);
    check_buffer("reduce_scatter", "send", send, bytes);
    check_buffer("reduce_scatter", "recv", recv, bytes);
    return run(CollectiveKind::reduce_scatter, bytes, dtype_size(dt), [=] {
      if (send != recv && bytes) std::memmove(recv, send, bytes);
    });
  }

  HandlePtr all_gather_async(const void* send, void* recv, const std::vector<size_t>& counts,
                             DType dt) override {
    check_counts("all_gather", counts, 1);
    const size_t bytes = counts[0] * dtype_size(dt);
    check_buffer("all_gather", "send", send, bytes);
    check_buffer("all_gather", "recv", recv, bytes);
    return run(CollectiveKind::all_gather, bytes, dtype_size(dt), [=] {
      if (send != recv && bytes) std::memmove(recv, send, bytes);
    });
  }

  HandlePtr broadcast_async(void* buf, size_t bytes, int root) override {
    check_root("broadcast", root, 1);
    check_buffer("broadcast", "buf", buf, bytes);
    return run(CollectiveKind::broadcast, bytes, 1, [] {});
  }

  HandlePtr barrier_async() override {
    return run(CollectiveKind::barrier, 0, 1, [] {});
  }

  HandlePtr all_to_all_async(const void* send, void* recv, size_t bytes_per_rank) override {
    check_all_to_all(send, recv, bytes_per_rank, 1);
    return run(CollectiveKind::all_to_all, bytes_per_rank, 1, [=] {
      if (bytes_per_rank) std::memcpy(recv, send, bytes_per_rank);
    });
  }

  HandlePtr send_async(const void*, size_t, int peer) override {
    check_peer("send", "peer", peer, 1);
    check_not_self("send", peer, 0);
    return nullptr;  // not reached
  }
  HandlePtr recv_async(void*, size_t, int peer) override {
    check_peer("recv", "peer", peer, 1);
    check_not_self("recv", peer, 0);
    return nullptr;  // not reached
  }
  // To itself: one copy, booked as a send and a recv.
  HandlePtr send_recv_async(const void* send, size_t send_bytes, int dst, void* recv,
                            size_t recv_bytes, int src) override {
    if (send_bytes) check_peer("send_recv", "dst", dst, 1);
    if (recv_bytes) check_peer("send_recv", "src", src, 1);
    if (send_bytes != recv_bytes)
      throw std::invalid_argument(
          "send_recv: with one rank the send is the recv; their byte counts must match (send " +
          std::to_string(send_bytes) + ", recv " + std::to_string(recv_bytes) + ")");
    check_buffer("send_recv", "send", send, send_bytes);
    check_buffer("send_recv", "recv", recv, recv_bytes);
    const int64_t issue = clock_();
    if (send != recv && send_bytes) std::memmove(recv, send, send_bytes);
    const int64_t end = clock_();
    if (!send_bytes) return completed_handle();
    try {
      for (CollectiveKind k : {CollectiveKind::send, CollectiveKind::recv}) {
        CommRecord r = make_p2p_record(k, send_bytes, 0);
        r.issue_ns = r.start_ns = issue;
        r.end_ns = end;
        notify(r);
      }
    } catch (...) {
      return completed_handle(std::current_exception());
    }
    return completed_handle();
  }

 private:
  template <class Fn>
  HandlePtr run(CollectiveKind kind, uint64_t bytes, size_t dtype_bytes, Fn&& work) {
    CommRecord r = make_record(kind, bytes, 1, dtype_bytes);
    r.issue_ns = r.start_ns = clock_();
    work();
    r.end_ns = clock_();
    // An observer that throws fails the handle, as it would on the MPI thread.
    try {
      notify(r);
    } catch (...) {
      return completed_handle(std::current_exception());
    }
    return completed_handle();
  }

  std::function<int64_t()> clock_;
};

}  // namespace

std::unique_ptr<Communicator> make_single_communicator(std::function<int64_t()> clock) {
  return std::make_unique<SingleCommunicator>(std::move(clock));
}

}  // namespace hybrid::engine::comm
