// The tracer: per-thread, lock-free event buffers and the scope that fills them.
//
// Each thread that records gets its own single-producer buffer (a linked list of
// fixed-size chunks): appending is a store and a release increment, with no lock
// and no allocation except once per chunk. drain() may run on another thread
// concurrently (single consumer). When disabled, a Scope costs one relaxed load.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "profiler/event.h"

namespace hybrid::profiler {

// Observers of scope boundaries: NVTX ranges and CUPTI external correlation ids
// hook in here (profiler/nvtx.cpp, profiler/cupti_collector.cpp), so the tracer
// itself knows nothing of CUDA.
class RangeListener {
 public:
  virtual ~RangeListener() = default;
  virtual void on_begin(std::string_view name, Category category, int32_t module_id) = 0;
  virtual void on_end(Category category, int32_t module_id) = 0;
};

class Tracer {
 public:
  explicit Tracer(int rank = 0);
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  void set_enabled(bool on) { enabled_.store(on, std::memory_order_relaxed); }
  bool enabled() const noexcept { return enabled_.load(std::memory_order_relaxed); }

  int rank() const { return rank_; }
  void set_rank(int rank) { rank_ = rank; }

  // Step stamped on the events recorded from now on (-1: outside any step).
  void set_step(int32_t step) { step_.store(step, std::memory_order_relaxed); }
  int32_t step() const { return step_.load(std::memory_order_relaxed); }

  // Interning takes a lock: call sites intern once and keep the id.
  uint32_t intern(std::string_view name);
  std::string name(uint32_t id) const;
  std::vector<std::string> names() const;  // id → name

  int64_t now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                epoch_)
        .count();
  }
  std::chrono::steady_clock::time_point epoch() const { return epoch_; }

  // Appends to the calling thread's buffer; rank and (if unset) step are filled in.
  void record(Event e);

  // Moves out every event recorded so far, from all threads, sorted by start time.
  std::vector<Event> drain();
  uint64_t recorded_count() const { return recorded_.load(std::memory_order_relaxed); }

  void add_listener(RangeListener* l) { listeners_.push_back(l); }
  const std::vector<RangeListener*>& listeners() const { return listeners_; }

 private:
  struct Chunk;
  struct ThreadBuffer;
  ThreadBuffer* buffer_for_this_thread();

  std::atomic<bool> enabled_{false};
  std::atomic<int32_t> step_{-1};
  std::atomic<uint64_t> recorded_{0};
  int rank_ = 0;
  const uint64_t id_;  // distinguishes tracers in the thread-local cache
  std::chrono::steady_clock::time_point epoch_;
  std::vector<RangeListener*> listeners_;

  mutable std::mutex mutex_;  // guards names_ and buffers_ (not the hot path)
  std::unordered_map<std::string, uint32_t> name_ids_;
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<ThreadBuffer>> buffers_;
};

// RAII scope: an event from construction to destruction on the calling thread.
class Scope {
 public:
  Scope(Tracer* tracer, uint32_t name_id, Category category, int32_t module_id = -1,
        uint64_t flops = 0, uint64_t bytes = 0, uint16_t lane = kLaneCompute);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

  void add_flops(uint64_t f) { event_.flops += f; }
  void add_bytes(uint64_t b) { event_.bytes += b; }

 private:
  Tracer* tracer_;  // null when tracing was off at construction
  Event event_;
};

}  // namespace hybrid::profiler
