#include "gui/model/gpu_summary.h"

#include <algorithm>

namespace hybrid::gui {

namespace {

double us_of(int64_t ns) { return double(ns) * 1e-3; }

bool has_gpu_records(const profiler::EventSet& events) {
  return std::any_of(events.events.begin(), events.events.end(),
                     [](const profiler::Event& e) { return profiler::is_gpu_record(e); });
}

}  // namespace

GpuRankSummary summarize_rank(const profiler::GpuRankTimeline& t) {
  GpuRankSummary r;
  r.rank = t.rank;
  r.span_us = us_of(t.span_ns);
  r.idle_us = us_of(t.idle_ns);
  r.compute_us = us_of(t.compute_ns);
  r.non_compute_us = us_of(t.non_compute_ns);
  r.idle_pct = t.pct(t.idle_ns);
  r.compute_pct = t.pct(t.compute_ns);
  r.non_compute_pct = t.pct(t.non_compute_ns);
  r.comm_us = us_of(t.comm_ns);
  r.memory_us = us_of(t.memory_ns);
  r.exposed_comm_us = us_of(t.exposed_comm_ns);
  r.exposed_comm_pct = t.pct(t.exposed_comm_ns);
  r.overlap_pct = t.comm_comp_overlap_pct();
  r.computation_kernels = t.computation_kernels;
  r.communication_kernels = t.communication_kernels;
  r.memory_records = t.memory_records;
  for (int mask = 1; mask < profiler::kGpuWorkMasks; ++mask) {
    const int64_t ns = t.exclusive_ns[size_t(mask)];
    if (ns > 0) r.kinds.push_back({mask, profiler::gpu_work_mask_name(mask), us_of(ns), t.pct(ns)});
  }
  return r;
}

GpuSummary build_gpu_summary(const profiler::RunProfile& p, const profiler::EventSet& events,
                             size_t top_kernels) {
  GpuSummary s;
  s.run_id = p.run.id;
  s.source = p.run.source;
  s.backend = p.run.backend;
  s.device = p.run.device;
  std::vector<profiler::GpuRankTimeline> timelines = p.gpu;
  // Runs stored before the analysis existed still have their CUPTI records.
  if (timelines.empty() && has_gpu_records(events)) {
    timelines = profiler::analyze_gpu_timeline(events.events, events.names);
    s.from_events = !timelines.empty();
  }
  std::sort(timelines.begin(), timelines.end(),
            [](const auto& a, const auto& b) { return a.rank < b.rank; });
  for (const auto& t : timelines) {
    GpuRankSummary r = summarize_rank(t);
    if (top_kernels > 0) r.top_kernels = profiler::top_gpu_kernels(events, t.rank, top_kernels);
    s.ranks.push_back(std::move(r));
  }
  return s;
}

}  // namespace hybrid::gui
