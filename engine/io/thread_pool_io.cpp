// The pread/pwrite engine of AsyncIo: thread_count × queue_depth threads, each
// carrying out one block at a time with blocking calls, so that up to that many
// blocks are in flight at the device.
#include <thread>
#include <vector>

#include "engine/io/io_requests.h"

namespace hybrid::engine::io {

namespace {

class ThreadPoolIo final : public QueuedIo {
 public:
  ThreadPoolIo(const AioConfig& cfg, Observer observer, std::function<int64_t()> clock)
      : QueuedIo(cfg, std::move(observer), std::move(clock)) {
    const int n = cfg.thread_count * cfg.queue_depth;
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { run(); });
  }
  ~ThreadPoolIo() override { stop_threads(); }

 private:
  void run() {
    for (;;) {
      const auto blocks = requests_.take(1);
      if (blocks.empty()) return;
      requests_.started(blocks[0]);
      requests_.finished(blocks[0], transfer_block(blocks[0]));
    }
  }
};

}  // namespace

std::unique_ptr<AsyncIo> make_thread_pool_io(const AioConfig& cfg, AsyncIo::Observer observer,
                                             std::function<int64_t()> clock) {
  return std::make_unique<ThreadPoolIo>(cfg, std::move(observer), std::move(clock));
}

}  // namespace hybrid::engine::io
