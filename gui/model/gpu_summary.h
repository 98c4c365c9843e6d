// The GPU window as data: per rank, how its device spent the span from its first
// GPU record to its last (idle / compute / non-compute), how much of the
// communication ran while computation did (overlap), the exposed communication,
// the exclusive kinds of work, and the kernels that took the most device time.
// Every figure comes from the profiler's GPU-timeline analysis
// (profiler/gpu_timeline.h; definitions in docs/profiler.md, "GPU timeline"):
// the stored gpu_timeline rows, or, for a run stored without them but with GPU
// records among its events, the same analysis run on those events.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "profiler/gpu_timeline.h"
#include "profiler/profile_data.h"

namespace hybrid::gui {

// One exclusive combination of work (GpuRankTimeline::exclusive_ns).
struct GpuKindShare {
  int mask = 0;      // 1 computation, 2 communication, 4 memory
  std::string name;  // profiler::gpu_work_mask_name(mask)
  double us = 0;
  double pct = 0;  // of the span
};

struct GpuRankSummary {
  int rank = 0;
  double span_us = 0;
  double idle_us = 0, compute_us = 0, non_compute_us = 0;     // add up to span_us
  double idle_pct = 0, compute_pct = 0, non_compute_pct = 0;  // of the span; add up to 100
  double comm_us = 0;                                         // a communication kernel runs
  double memory_us = 0;                                       // a memcpy/memset runs
  double exposed_comm_us = 0;   // communication with no computation running
  double exposed_comm_pct = 0;  // of the span
  std::optional<double>
      overlap_pct;  // % of communication time with computation running; none without communication
  uint64_t computation_kernels = 0, communication_kernels = 0, memory_records = 0;
  std::vector<GpuKindShare> kinds;  // masks 1..7 with time, by mask (idle is idle_us)
  std::vector<profiler::GpuKernelRow> top_kernels;  // by device time, most first
};

struct GpuSummary {
  int64_t run_id = 0;
  std::string source;  // "hybrid" | "kineto"
  std::string backend;
  std::string device;
  bool from_events = false;           // no stored analysis: computed from the run's GPU records
  std::vector<GpuRankSummary> ranks;  // by rank; empty when the run has no GPU records
  bool has_gpu() const { return !ranks.empty(); }
};

GpuSummary build_gpu_summary(const profiler::RunProfile& profile, const profiler::EventSet& events,
                             size_t top_kernels = 10);

// One rank's row from its analysis (top_kernels left empty).
GpuRankSummary summarize_rank(const profiler::GpuRankTimeline& t);

}  // namespace hybrid::gui
