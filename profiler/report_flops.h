// The flops profile of a run, in the spirit of DeepSpeed's flops profiler: a
// summary (world size, batch, params, latencies, FLOPs, achieved FLOP/s), an
// aggregated profile per depth (top module types), and the module tree with
// forward and backward separately. Every rank in the profile is covered: latencies
// show the mean over ranks with [min, max].
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "profiler/profile_data.h"

namespace hybrid::profiler {

struct FlopsReportOptions {
  int module_depth = -1;  // deepest tree level printed (and aggregated); -1 = all
  int top_modules = 1;    // module types listed per depth in the aggregated profile
  // The per-module forward and backward trees. Without them the report is the summary
  // and the aggregated profile, as DeepSpeed's flops profiler prints with detailed=false.
  bool detailed = true;
  std::optional<int64_t> step;  // the profiled step; default: the last with layer stats
};

// Throws std::invalid_argument when options.step has no layer stats.
std::string flops_report(const RunProfile& profile, const FlopsReportOptions& options = {});

}  // namespace hybrid::profiler
