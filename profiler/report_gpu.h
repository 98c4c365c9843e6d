// The GPU-timeline report of a run (ours on CUDA, or an imported PyTorch trace):
// per rank the temporal breakdown (idle / compute / non-compute), the
// computation–communication overlap, exposed communication, the kernel-type
// breakdown and the kernels that took the most device time. Definitions:
// docs/profiler.md, "GPU timeline".
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "profiler/profile_data.h"

namespace hybrid::profiler {

// `events` gives the top kernels (may be empty: then none are listed).
std::string gpu_report(const RunProfile& profile, const EventSet& events, size_t top_kernels = 10);

// {"ranks": [{"rank", "kernel_span_us", "idle_us", "compute_us", "non_compute_us",
//  "idle_pct", "compute_pct", "non_compute_pct", "comm_comp_overlap_pct" (null without
//  communication)}, ...]}
nlohmann::json gpu_report_json(const RunProfile& profile);

}  // namespace hybrid::profiler
