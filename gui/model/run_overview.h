// The run overview as data: the step curves (loss, loss scale, step time,
// tokens/s), skipped steps, headline figures, and memory by category.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "profiler/profile_data.h"

namespace hybrid::gui {

// y may hold NaN (an overflowed fp16 step has no loss): plots leave a gap there.
struct Series {
  std::string label;
  std::string unit;
  std::vector<double> x;  // step
  std::vector<double> y;
};

// Memory of one tracking-allocator category: the largest value over ranks (the
// rank that limits), and which rank that was.
struct MemoryCategory {
  std::string category;
  uint64_t current_bytes = 0;
  uint64_t peak_bytes = 0;
  std::optional<uint64_t> predicted_bytes;
  int peak_rank = 0;
};

struct RunOverview {
  profiler::RunInfo run;
  Series loss, loss_scale, step_ms, tokens_per_s;
  std::vector<int64_t> skipped_steps;
  int64_t steps = 0;
  double median_step_ms = 0;       // over all steps
  double median_tokens_per_s = 0;  // over steps that were not skipped
  double median_flops_per_s = 0;
  std::optional<double> final_loss;    // of the last step with a finite loss
  bool last_loss_finite = true;        // false: the run ended on NaN/inf (diverged)
  std::vector<MemoryCategory> memory;  // by category name
  uint64_t peak_total_bytes = 0;       // Σ categories' peaks (an upper bound of the true peak)
  std::optional<uint64_t> predicted_total_bytes;  // when every category has a prediction
};

RunOverview build_run_overview(const profiler::RunProfile& profile);

}  // namespace hybrid::gui
