// Asynchronous reads and writes of swap files, with DeepSpeed's "aio" settings
// (config key `aio`): each request is cut into block_size blocks that I/O
// threads carry out concurrently, so one large transfer keeps several requests
// in flight at the device, as NVMe drives need to reach their rate.
//
// Two engines, the same semantics (engine/io/README.md has the measurements):
//   threads:  a pool of thread_count × queue_depth threads, each with one
//             blocking pread/pwrite in flight (single_submit and overlap_events
//             do not apply);
//   io_uring: thread_count threads, each with a ring of queue_depth entries;
//             single_submit submits every block on its own instead of a batch,
//             overlap_events refills the ring as blocks complete instead of
//             waiting for the whole batch (built when liburing is found).
//
// A request's buffer must stay valid until wait() returned for its ticket. An
// I/O error is rethrown by wait() as a std::runtime_error naming the operation,
// the bytes, the offset and the file (ENOSPC included). Each completed request
// is reported to the observer (the comm tracer's I/O table) from an I/O thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "engine/config/config.h"
#include "engine/io/swap_file.h"
#include "profiler/comm_record.h"

namespace hybrid::engine::io {

enum class IoEngine : uint8_t { threads, io_uring };
std::string_view to_string(IoEngine e);
// Whether this build has the io_uring engine (liburing found at configure time).
bool io_uring_available();
// The engine hybrid uses for `cfg`: the pread/pwrite pool, measured as fast as
// io_uring by bench_nvme (engine/io/README.md), unless the config asks for
// io_uring's submission semantics (single_submit true or overlap_events false)
// and io_uring is built.
IoEngine choose_io_engine(const AioConfig& cfg);

class AsyncIo {
 public:
  using Ticket = uint64_t;  // 0: nothing to wait for (an empty request)
  using Observer = std::function<void(const profiler::IoRecord&)>;
  virtual ~AsyncIo() = default;

  virtual Ticket read(const SwapFile& f, uint64_t offset, void* dst, size_t bytes) = 0;
  virtual Ticket write(const SwapFile& f, uint64_t offset, const void* src, size_t bytes) = 0;
  // Whether the request has completed (wait() will not block).
  virtual bool done(Ticket t) = 0;
  // Blocks until the request has completed; rethrows its error. Unknown tickets
  // (0, or waited for already) return at once.
  virtual void wait(Ticket t) = 0;

  void read_sync(const SwapFile& f, uint64_t offset, void* dst, size_t bytes) {
    wait(read(f, offset, dst, bytes));
  }
  void write_sync(const SwapFile& f, uint64_t offset, const void* src, size_t bytes) {
    wait(write(f, offset, src, bytes));
  }
};

// clock: the time base of the observer's records (the tracer's); a steady
// clock when empty. Throws std::runtime_error when the engine is not built or
// cannot start (io_uring refused by the kernel).
std::unique_ptr<AsyncIo> make_async_io(const AioConfig& cfg, IoEngine engine,
                                       AsyncIo::Observer observer = {},
                                       std::function<int64_t()> clock = {});

}  // namespace hybrid::engine::io
