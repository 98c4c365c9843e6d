// The profiler's GPU hooks, usable from code that knows nothing of CUDA:
// NVTX ranges and the CUPTI activity collector, both as RangeListeners that a
// Tracer calls on every scope. In a CPU-only build the NVTX factory returns
// nullptr and the collector is inert (status says why).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "profiler/gpu_activity.h"
#include "profiler/tracer.h"

namespace hybrid::profiler {

// Pushes/pops an NVTX range (domain "hybrid", colour and category per event
// category, payload = module id) for every scope: steps, modules, collectives.
// nullptr in CPU-only builds.
std::unique_ptr<RangeListener> make_nvtx_listener();

struct CuptiOptions {
  size_t buffer_count = 8;  // bounded pool: records beyond it are dropped, and counted
  size_t buffer_bytes = size_t(4) << 20;
};

// Collects kernel, memcpy and memset activity through CUPTI and turns it into
// Events on the tracer (lane per stream, module attribution through external
// correlation ids pushed on every scope). Add it to the tracer as a listener.
class GpuCollector : public RangeListener {
 public:
  // False when CUPTI could not be enabled; the collector then does nothing.
  virtual bool available() const = 0;
  // "CUPTI active (...)" or "CUPTI unavailable: <reason>".
  virtual std::string status() const = 0;
  // Delivers the records completed so far to the tracer; returns the events added.
  // final: also emit records whose correlation never arrived (end of run).
  virtual size_t flush(bool final = false) = 0;
  virtual GpuActivityParser::Stats stats() const = 0;
  virtual uint64_t pool_exhausted() const = 0;
};

// One active collector per process (CUPTI's callbacks are global); a second one
// is inert while the first lives.
std::unique_ptr<GpuCollector> make_cupti_collector(Tracer& tracer, CuptiOptions options = {});

// A collector that does nothing and reports `status`.
std::unique_ptr<GpuCollector> make_inert_collector(std::string status);

}  // namespace hybrid::profiler
