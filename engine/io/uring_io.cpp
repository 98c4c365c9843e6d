// The io_uring engine of AsyncIo (built when liburing is found): thread_count
// threads, each with a ring of queue_depth entries, DeepSpeed's aio semantics:
// single_submit submits every block on its own (one io_uring_submit each)
// instead of the whole batch at once; overlap_events refills the ring as blocks
// complete instead of waiting for the batch to finish.
#ifdef HYBRID_HAVE_LIBURING
#include <liburing.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/io/io_requests.h"

namespace hybrid::engine::io {

namespace {

class UringIo final : public QueuedIo {
 public:
  UringIo(const AioConfig& cfg, Observer observer, std::function<int64_t()> clock)
      : QueuedIo(cfg, std::move(observer), std::move(clock)),
        depth_(unsigned(cfg.queue_depth)),
        single_submit_(cfg.single_submit),
        overlap_(cfg.overlap_events) {
    rings_.resize(size_t(cfg.thread_count));
    for (size_t i = 0; i < rings_.size(); ++i) {
      const int rc = io_uring_queue_init(depth_, &rings_[i], 0);
      if (rc < 0) {
        for (size_t j = 0; j < i; ++j) io_uring_queue_exit(&rings_[j]);
        throw std::runtime_error("nvme: io_uring_queue_init(" + std::to_string(depth_) +
                                 ") failed: " + std::strerror(-rc));
      }
    }
    for (auto& ring : rings_) threads_.emplace_back([this, &ring] { run(ring); });
  }
  ~UringIo() override {
    stop_threads();
    for (auto& ring : rings_) io_uring_queue_exit(&ring);
  }

 private:
  void run(io_uring& ring) {
    std::vector<IoBlock> slots(depth_);
    std::vector<unsigned> free_slots;
    for (unsigned i = 0; i < depth_; ++i) free_slots.push_back(depth_ - 1 - i);
    unsigned inflight = 0;
    for (;;) {
      if (overlap_ || inflight == 0) {
        const auto blocks = inflight == 0 ? requests_.take(free_slots.size())
                                          : requests_.try_take(free_slots.size());
        if (blocks.empty() && inflight == 0) return;  // stopped and drained
        for (const IoBlock& b : blocks) {
          const unsigned s = free_slots.back();
          free_slots.pop_back();
          slots[s] = b;
          io_uring_sqe* sqe = io_uring_get_sqe(&ring);
          if (b.write)
            io_uring_prep_write(sqe, b.fd, b.buf, unsigned(b.bytes), b.offset);
          else
            io_uring_prep_read(sqe, b.fd, b.buf, unsigned(b.bytes), b.offset);
          io_uring_sqe_set_data64(sqe, s);
          requests_.started(b);
          if (single_submit_) io_uring_submit(&ring);
        }
        if (!single_submit_ && !blocks.empty()) io_uring_submit(&ring);
        inflight += unsigned(blocks.size());
      }
      // Reap at least one completion; without overlap_events, the whole batch.
      do {
        io_uring_cqe* cqe = nullptr;
        const int rc = io_uring_wait_cqe(&ring, &cqe);
        if (rc == -EINTR) continue;
        if (rc < 0)
          throw std::runtime_error(std::string("nvme: io_uring_wait_cqe: ") + std::strerror(-rc));
        const unsigned s = unsigned(io_uring_cqe_get_data64(cqe));
        const int res = cqe->res;
        io_uring_cqe_seen(&ring, cqe);
        requests_.finished(slots[s], complete(slots[s], res));
        free_slots.push_back(s);
        --inflight;
      } while (!overlap_ && inflight > 0);
    }
  }

  // A short transfer (rare on regular files) finishes with blocking calls.
  static int complete(const IoBlock& b, int res) {
    if (res < 0) return -res;
    if (size_t(res) == b.bytes) return 0;
    IoBlock rest = b;
    rest.offset += uint64_t(res);
    rest.buf += res;
    rest.bytes -= size_t(res);
    return transfer_block(rest);
  }

  unsigned depth_;
  bool single_submit_, overlap_;
  std::vector<io_uring> rings_;
};

}  // namespace

std::unique_ptr<AsyncIo> make_uring_io(const AioConfig& cfg, AsyncIo::Observer observer,
                                       std::function<int64_t()> clock) {
  return std::make_unique<UringIo>(cfg, std::move(observer), std::move(clock));
}

}  // namespace hybrid::engine::io
#endif  // HYBRID_HAVE_LIBURING
