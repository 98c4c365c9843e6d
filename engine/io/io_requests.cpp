#include "engine/io/io_requests.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace hybrid::engine::io {

IoRequests::IoRequests(int64_t block_size, AsyncIo::Observer observer,
                       std::function<int64_t()> clock)
    : block_size_(block_size), observer_(std::move(observer)), clock_(std::move(clock)) {}

AsyncIo::Ticket IoRequests::submit(bool write, const SwapFile& f, uint64_t offset, char* buf,
                                   size_t bytes) {
  if (bytes == 0) return 0;
  if (offset + bytes > f.size())
    throw std::out_of_range(fmt::format("nvme: {} {} bytes at offset {} of {} ({} bytes)",
                                        write ? "writing" : "reading", bytes, offset, f.path(),
                                        f.size()));
  std::lock_guard lock(mutex_);
  const AsyncIo::Ticket t = next_++;
  Request& r = requests_[t];
  r.write = write;
  r.path = f.path();
  r.offset = offset;
  r.bytes = bytes;
  r.issue_ns = clock_();
  for (size_t done = 0; done < bytes; done += size_t(block_size_)) {
    IoBlock b;
    b.ticket = t;
    b.write = write;
    b.offset = offset + done;
    b.buf = buf + done;
    b.bytes = std::min(size_t(block_size_), bytes - done);
    b.fd = f.fd_for(b.offset, b.buf, b.bytes);
    queue_.push_back(b);
    ++r.blocks_left;
  }
  work_.notify_all();
  return t;
}

std::vector<IoBlock> IoRequests::take(size_t max) {
  std::unique_lock lock(mutex_);
  work_.wait(lock, [&] { return !queue_.empty() || stopping_; });
  std::vector<IoBlock> out;
  while (!queue_.empty() && out.size() < max) {
    out.push_back(queue_.front());
    queue_.pop_front();
  }
  return out;
}

std::vector<IoBlock> IoRequests::try_take(size_t max) {
  std::lock_guard lock(mutex_);
  std::vector<IoBlock> out;
  while (!queue_.empty() && out.size() < max) {
    out.push_back(queue_.front());
    queue_.pop_front();
  }
  return out;
}

void IoRequests::started(const IoBlock& b) {
  const int64_t t = clock_();
  std::lock_guard lock(mutex_);
  Request& r = requests_.at(b.ticket);
  if (r.start_ns < 0) r.start_ns = t;
}

void IoRequests::finished(const IoBlock& b, int error) {
  const int64_t t = clock_();
  profiler::IoRecord rec;
  bool report = false;
  {
    std::lock_guard lock(mutex_);
    Request& r = requests_.at(b.ticket);
    if (error && !r.error) r.error = error, r.error_offset = b.offset;
    if (r.blocks_left > 1) {
      --r.blocks_left;
      return;
    }
    r.end_ns = t;
    if (r.start_ns < 0) r.start_ns = t;
    report = !r.error && observer_;
    rec.kind = r.write ? profiler::IoKind::nvme_write : profiler::IoKind::nvme_read;
    rec.bytes = r.bytes;
    rec.issue_ns = r.issue_ns;
    rec.start_ns = r.start_ns;
    rec.end_ns = r.end_ns;
  }
  // The observer runs outside the lock, and before the request counts as done:
  // whoever waited on it finds its record delivered.
  if (report) observer_(rec);
  std::lock_guard lock(mutex_);
  requests_.at(b.ticket).blocks_left = 0;
  done_.notify_all();
}

bool IoRequests::done(AsyncIo::Ticket t) {
  std::lock_guard lock(mutex_);
  auto it = requests_.find(t);
  return it == requests_.end() || it->second.blocks_left == 0;
}

void IoRequests::wait(AsyncIo::Ticket t) {
  std::unique_lock lock(mutex_);
  auto it = requests_.find(t);
  if (it == requests_.end()) return;
  Request& pending = it->second;  // references survive rehashing, iterators do not
  done_.wait(lock, [&] { return pending.blocks_left == 0; });
  const Request r = std::move(pending);
  requests_.erase(t);
  lock.unlock();
  if (!r.error) return;
  const std::string why = r.error < 0 ? "the file ends before it" : std::strerror(r.error);
  throw std::runtime_error(fmt::format(
      "nvme: {} {} bytes at offset {} of {} failed{}: {}", r.write ? "writing" : "reading", r.bytes,
      r.offset, r.path,
      r.error_offset != r.offset ? fmt::format(" (at offset {})", r.error_offset) : std::string(),
      why));
}

void IoRequests::stop() {
  std::lock_guard lock(mutex_);
  stopping_ = true;
  work_.notify_all();
}

int transfer_block(const IoBlock& b) {
  size_t done = 0;
  while (done < b.bytes) {
    const ssize_t n = b.write ? ::pwrite(b.fd, b.buf + done, b.bytes - done, off_t(b.offset + done))
                              : ::pread(b.fd, b.buf + done, b.bytes - done, off_t(b.offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return b.write ? ENOSPC : -1;
    done += size_t(n);
  }
  return 0;
}

}  // namespace hybrid::engine::io
