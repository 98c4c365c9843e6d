// GPU activity records (what CUPTI reports: kernels, memcpys, memsets) as plain
// structs, and their conversion into profiler Events: lanes per stream, module
// attribution through external correlation ids, times shifted onto the tracer's
// clock. Nothing here includes CUPTI, so the parsing and attribution are
// unit-tested on any machine with synthetic records; the live collector
// (profiler/cupti_collector.cpp) only copies CUPTI's fields in. The analysis of
// the resulting events is profiler/gpu_timeline.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "profiler/event.h"

namespace hybrid::profiler {

enum class GpuActivityKind : uint8_t { kernel, memcpy, memset };

struct GpuActivityRecord {
  GpuActivityKind kind = GpuActivityKind::kernel;
  std::string name;  // kernel name as CUPTI gives it (mangled), or "memcpy HtoD", "memset"
  uint32_t device = 0;
  uint32_t stream = 0;    // CUPTI stream id
  uint64_t start_ns = 0;  // CUPTI's clock
  uint64_t end_ns = 0;
  uint32_t correlation_id = 0;
  uint64_t bytes = 0;  // memcpy/memset size
};

// CUPTI's link from an API call (correlation id) to what the CPU had pushed.
struct ExternalCorrelation {
  uint32_t correlation_id = 0;
  uint64_t external_id = 0;
};

// Where the CPU was when it launched GPU work: pushed as a CUPTI external id.
// Layout (64 bits): step + 1 (24 bits) | category (8 bits) | module_id + 1 (32 bits),
// so 0 never names a scope.
struct ScopeTag {
  int32_t module_id = -1;
  Category category = Category::other;
  int32_t step = -1;
  bool operator==(const ScopeTag&) const = default;
};
uint64_t encode_external_id(const ScopeTag& tag);
ScopeTag decode_external_id(uint64_t id);  // throws std::invalid_argument for a malformed id

// "void ns::kernel<float>(float*, int)" from "_ZN2ns6kernelIfEEvPfi" without the
// return type and parameter list: "ns::kernel<float>". Non-mangled names pass through.
std::string short_kernel_name(std::string_view name);

// CUPTI's memcpy kind enumeration (CUpti_ActivityMemcpyKind) → "memcpy HtoD" etc.
std::string memcpy_name(uint8_t copy_kind);

// A fixed pool of activity buffers (count × bytes, 8-byte aligned, as CUPTI
// requires). When every buffer is in use, acquire() returns nullptr and counts it:
// CUPTI then drops records, which it reports as dropped.
class ActivityBufferPool {
 public:
  ActivityBufferPool(size_t count, size_t bytes);
  ~ActivityBufferPool();
  ActivityBufferPool(const ActivityBufferPool&) = delete;
  ActivityBufferPool& operator=(const ActivityBufferPool&) = delete;

  uint8_t* acquire();
  void release(uint8_t* buffer);  // throws std::invalid_argument for a foreign or free buffer
  size_t buffer_bytes() const { return bytes_; }
  size_t count() const { return buffers_.size(); }
  size_t in_use() const;
  uint64_t exhausted() const;  // acquire() calls that found no free buffer

 private:
  size_t bytes_;
  std::vector<uint8_t*> buffers_;
  std::vector<bool> busy_;
  mutable std::mutex mutex_;
  uint64_t exhausted_ = 0;
};

class GpuActivityParser {
 public:
  // Correlation ids without a record yet are kept up to this many (oldest evicted):
  // most API calls inside a scope launch nothing.
  explicit GpuActivityParser(size_t max_correlations = size_t(1) << 20);

  void add_record(GpuActivityRecord r);
  void add_external_correlation(const ExternalCorrelation& c);
  void add_dropped(uint64_t n);

  // Converts the records received so far into Events, sorted by start:
  // start = record start + clock_offset_ns (tracer time = CUPTI time + offset),
  // lane = kLaneGpuBase + the stream's index (streams numbered in order of first
  // appearance), module/step from the external correlation. Unless `final`, a
  // record whose correlation is not known yet waits for one more call (its
  // correlation may be in a buffer delivered later); then it is emitted with
  // module_id -1. `intern` maps a name to the tracer's name id.
  std::vector<Event> take_events(const std::function<uint32_t(std::string_view)>& intern,
                                 int64_t clock_offset_ns, bool final = false);

  struct Stats {
    uint64_t records = 0;       // records received
    uint64_t events = 0;        // events produced
    uint64_t attributed = 0;    // events with a known external correlation
    uint64_t unattributed = 0;  // events emitted without one
    uint64_t dropped = 0;       // records CUPTI reported as dropped
    uint64_t evicted = 0;       // correlations evicted unused
    size_t pending = 0;         // records waiting
  };
  Stats stats() const;
  size_t stream_count() const;

 private:
  mutable std::mutex mutex_;
  size_t max_correlations_;
  std::map<uint32_t, uint64_t> correlations_;  // correlation id → external id
  struct Pending {
    GpuActivityRecord record;
    bool deferred = false;
  };
  std::vector<Pending> pending_;
  std::unordered_map<uint32_t, uint16_t> stream_lanes_;
  std::unordered_map<std::string, std::string> short_names_;
  Stats stats_;
};

}  // namespace hybrid::profiler
