// The bookkeeping every AsyncIo engine shares (engine/io/async_io.h): requests
// cut into blocks, a queue the I/O threads take blocks from, completion per
// request, errors kept for wait(), and one IoRecord per completed request.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/io/async_io.h"

namespace hybrid::engine::io {

struct IoBlock {
  AsyncIo::Ticket ticket = 0;
  bool write = false;
  int fd = -1;
  uint64_t offset = 0;
  char* buf = nullptr;
  size_t bytes = 0;
};

class IoRequests {
 public:
  IoRequests(int64_t block_size, AsyncIo::Observer observer, std::function<int64_t()> clock);

  AsyncIo::Ticket submit(bool write, const SwapFile& f, uint64_t offset, char* buf, size_t bytes);
  // For I/O threads: up to `max` blocks, waiting for at least one; empty once
  // stop() was called and the queue is drained.
  std::vector<IoBlock> take(size_t max);
  // Non-blocking: up to `max` blocks, possibly none.
  std::vector<IoBlock> try_take(size_t max);
  void started(const IoBlock& b);
  // error: 0, an errno value, or -1 for a read past the end of the file.
  void finished(const IoBlock& b, int error);

  bool done(AsyncIo::Ticket t);
  void wait(AsyncIo::Ticket t);
  // Stops handing out blocks once the queue is empty; wakes waiting threads.
  void stop();
  int64_t now() const { return clock_(); }

 private:
  struct Request {
    bool write = false;
    std::string path;
    uint64_t offset = 0, bytes = 0;
    size_t blocks_left = 0;
    int error = 0;
    uint64_t error_offset = 0;
    int64_t issue_ns = 0, start_ns = -1, end_ns = 0;
  };

  int64_t block_size_;
  AsyncIo::Observer observer_;
  std::function<int64_t()> clock_;
  std::mutex mutex_;
  std::condition_variable work_, done_;
  std::deque<IoBlock> queue_;
  std::unordered_map<AsyncIo::Ticket, Request> requests_;
  AsyncIo::Ticket next_ = 1;
  bool stopping_ = false;
};

// The AsyncIo calls every engine answers alike, from its requests; an engine
// starts the I/O threads that take blocks from requests_ and calls
// stop_threads() first when destroyed.
class QueuedIo : public AsyncIo {
 public:
  Ticket read(const SwapFile& f, uint64_t offset, void* dst, size_t bytes) override {
    return requests_.submit(false, f, offset, static_cast<char*>(dst), bytes);
  }
  Ticket write(const SwapFile& f, uint64_t offset, const void* src, size_t bytes) override {
    // The buffer is only read: pwrite takes a const pointer.
    return requests_.submit(true, f, offset, const_cast<char*>(static_cast<const char*>(src)),
                            bytes);
  }
  bool done(Ticket t) override { return requests_.done(t); }
  void wait(Ticket t) override { requests_.wait(t); }

 protected:
  QueuedIo(const AioConfig& cfg, Observer observer, std::function<int64_t()> clock)
      : requests_(cfg.block_size, std::move(observer), std::move(clock)) {}
  // The threads drain what is queued, then leave.
  void stop_threads() {
    requests_.stop();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  IoRequests requests_;
  std::vector<std::thread> threads_;
};

// One block with blocking pread/pwrite, resuming after partial transfers and
// EINTR. Returns 0, an errno value, or -1 for a read past the end of the file.
int transfer_block(const IoBlock& b);

}  // namespace hybrid::engine::io
