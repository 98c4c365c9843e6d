#include "engine/io/async_io.h"

#include <chrono>
#include <stdexcept>

namespace hybrid::engine::io {

// The engines (thread_pool_io.cpp, uring_io.cpp).
std::unique_ptr<AsyncIo> make_thread_pool_io(const AioConfig& cfg, AsyncIo::Observer observer,
                                             std::function<int64_t()> clock);
#ifdef HYBRID_HAVE_LIBURING
std::unique_ptr<AsyncIo> make_uring_io(const AioConfig& cfg, AsyncIo::Observer observer,
                                       std::function<int64_t()> clock);
#endif

std::string_view to_string(IoEngine e) {
  switch (e) {
    case IoEngine::threads:
      return "threads";
    case IoEngine::io_uring:
      return "io_uring";
  }
  return "?";
}

bool io_uring_available() {
#ifdef HYBRID_HAVE_LIBURING
  return true;
#else
  return false;
#endif
}

IoEngine choose_io_engine(const AioConfig& cfg) {
  const bool uring_semantics = cfg.single_submit || !cfg.overlap_events;
  return uring_semantics && io_uring_available() ? IoEngine::io_uring : IoEngine::threads;
}

std::unique_ptr<AsyncIo> make_async_io(const AioConfig& cfg, IoEngine engine,
                                       AsyncIo::Observer observer, std::function<int64_t()> clock) {
  if (!clock) {
    const auto epoch = std::chrono::steady_clock::now();
    clock = [epoch] {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                  epoch)
          .count();
    };
  }
  if (engine == IoEngine::threads)
    return make_thread_pool_io(cfg, std::move(observer), std::move(clock));
#ifdef HYBRID_HAVE_LIBURING
  return make_uring_io(cfg, std::move(observer), std::move(clock));
#else
  throw std::runtime_error("nvme: this build has no io_uring engine (liburing was not found)");
#endif
}

}  // namespace hybrid::engine::io
