// The live CUPTI collector (CUDA builds only). CUPTI delivers activity records
// in buffers through two process-global callbacks, so one collector at a time
// owns them (g_active). Buffers come from a bounded pool; when it is exhausted
// CUPTI drops records and reports how many, which the stats carry. Each record
// is copied into a plain GpuActivityRecord at once; attribution, lanes and
// clock shifting happen in GpuActivityParser (profiler/gpu_activity.cpp).
//
// Module attribution: on every tracer scope the collector pushes a CUSTOM0
// external correlation id encoding (module, category, step); CUPTI reports which
// API calls happened under which id (EXTERNAL_CORRELATION records).
//
// Without a GPU, cuptiActivityEnable fails (CUPTI_ERROR_UNKNOWN): the collector
// reports "CUPTI unavailable: ..." and stays inert.
#include <cupti.h>

#include <mutex>
#include <string>

#include "profiler/gpu_hooks.h"

namespace hybrid::profiler {

namespace {

class CuptiCollector;
std::mutex g_mutex;  // guards g_active
CuptiCollector* g_active = nullptr;

std::string cupti_error(const char* call, CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return std::string(call) + ": " + (s ? s : "unknown CUPTI error") + " (" +
         std::to_string(int(r)) + ")";
}

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                                         CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                         CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};

const char* kind_name(CUpti_ActivityKind k) {
  switch (k) {
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return "EXTERNAL_CORRELATION";
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return "CONCURRENT_KERNEL";
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return "MEMCPY";
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return "MEMSET";
    default:
      return "?";
  }
}

// A CUPTI GPU activity record (kernel, memcpy, memset) as ours; bytes: a
// memcpy's or memset's size.
template <class Activity>
GpuActivityRecord activity_record(GpuActivityKind kind, std::string name, const Activity& a,
                                  uint64_t bytes = 0) {
  return GpuActivityRecord{.kind = kind,
                           .name = std::move(name),
                           .device = a.deviceId,
                           .stream = a.streamId,
                           .start_ns = a.start,
                           .end_ns = a.end,
                           .correlation_id = a.correlationId,
                           .bytes = bytes};
}

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
void CUPTIAPI on_buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid);

class CuptiCollector final : public GpuCollector {
 public:
  CuptiCollector(Tracer& tracer, const CuptiOptions& options)
      : tracer_(tracer), pool_(options.buffer_count, options.buffer_bytes) {
    {
      std::lock_guard lock(g_mutex);
      if (g_active) {
        status_ = "CUPTI unavailable: another collector is active in this process";
        return;
      }
      g_active = this;
    }
    if (!start()) {
      std::lock_guard lock(g_mutex);
      g_active = nullptr;
    }
  }

  ~CuptiCollector() override {
    if (!active_) return;
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    deliver(true);
    std::lock_guard lock(g_mutex);
    g_active = nullptr;
  }

  void on_begin(std::string_view, Category category, int32_t module_id) override {
    if (!active_) return;
    cuptiActivityPushExternalCorrelationId(
        CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
        encode_external_id({module_id, category, tracer_.step()}));
  }
  void on_end(Category, int32_t) override {
    if (!active_) return;
    uint64_t last = 0;
    cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
  }

  bool available() const override { return active_; }
  std::string status() const override { return status_; }

  size_t flush(bool final) override {
    if (!active_) return 0;
    cuptiActivityFlushAll(final ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
    return deliver(final);
  }

  GpuActivityParser::Stats stats() const override { return parser_.stats(); }
  uint64_t pool_exhausted() const override { return pool_.exhausted(); }

  // ---- called from CUPTI's callbacks ----
  uint8_t* acquire_buffer(size_t* size) {
    *size = pool_.buffer_bytes();
    return pool_.acquire();
  }

  void buffer_completed(uint8_t* buffer, size_t valid) {
    CUpti_Activity* rec = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) parse(rec);
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped)
      parser_.add_dropped(dropped);
    pool_.release(buffer);
  }

 private:
  bool start() {
    CUptiResult r = cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed);
    if (r != CUPTI_SUCCESS) {
      status_ = "CUPTI unavailable: " + cupti_error("cuptiActivityRegisterCallbacks", r);
      return false;
    }
    for (size_t i = 0; i < std::size(kKinds); ++i) {
      r = cuptiActivityEnable(kKinds[i]);
      if (r != CUPTI_SUCCESS) {
        for (size_t j = 0; j < i; ++j) cuptiActivityDisable(kKinds[j]);
        status_ =
            "CUPTI unavailable: " +
            cupti_error((std::string("cuptiActivityEnable(") + kind_name(kKinds[i]) + ")").c_str(),
                        r);
        return false;
      }
    }
    // Tracer time = CUPTI time + offset; the tightest of a few back-to-back reads.
    int64_t best_gap = INT64_MAX;
    for (int i = 0; i < 5; ++i) {
      const int64_t before = tracer_.now_ns();
      uint64_t ts = 0;
      if (cuptiGetTimestamp(&ts) != CUPTI_SUCCESS) break;
      const int64_t after = tracer_.now_ns();
      if (after - before < best_gap) {
        best_gap = after - before;
        offset_ns_ = (before + after) / 2 - int64_t(ts);
      }
    }
    active_ = true;
    status_ = "CUPTI active (" + std::to_string(pool_.count()) + " buffers x " +
              std::to_string(pool_.buffer_bytes() >> 10) + " KiB)";
    return true;
  }

  void parse(const CUpti_Activity* rec) {
    switch (rec->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
        parser_.add_record(activity_record(GpuActivityKind::kernel, k->name ? k->name : "?", *k));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
        parser_.add_record(
            activity_record(GpuActivityKind::memcpy, memcpy_name(m->copyKind), *m, m->bytes));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
        parser_.add_record(activity_record(GpuActivityKind::memset, "memset", *m, m->bytes));
        break;
      }
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const auto* c = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(rec);
        if (c->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
          parser_.add_external_correlation({c->correlationId, c->externalId});
        break;
      }
      default:
        break;
    }
  }

  size_t deliver(bool final) {
    auto events = parser_.take_events([this](std::string_view n) { return tracer_.intern(n); },
                                      offset_ns_, final);
    for (const Event& e : events) tracer_.record(e);
    return events.size();
  }

  Tracer& tracer_;
  ActivityBufferPool pool_;
  GpuActivityParser parser_;
  bool active_ = false;
  std::string status_;
  int64_t offset_ns_ = 0;
};

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  std::lock_guard lock(g_mutex);
  if (!g_active) {
    *buffer = nullptr;
    *size = 0;
    return;
  }
  *buffer = g_active->acquire_buffer(size);
  if (!*buffer) *size = 0;  // pool exhausted: CUPTI drops records and counts them
}

void CUPTIAPI on_buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard lock(g_mutex);
  if (g_active && buffer) g_active->buffer_completed(buffer, valid);
}

}  // namespace

std::unique_ptr<GpuCollector> make_cupti_collector(Tracer& tracer, CuptiOptions options) {
  return std::make_unique<CuptiCollector>(tracer, options);
}

}  // namespace hybrid::profiler
