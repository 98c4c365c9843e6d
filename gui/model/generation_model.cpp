#include "gui/model/generation_model.h"

#include <algorithm>

namespace hybrid::gui {

GenerationTable build_generation_table(const std::vector<profiler::RunInfo>& runs,
                                       const std::vector<profiler::GenerationRow>& rows,
                                       std::optional<int64_t> only_run) {
  GenerationTable t;
  for (const auto& r : rows) {
    if (only_run && r.run_id != *only_run) continue;
    const auto run = std::find_if(runs.begin(), runs.end(),
                                  [&](const profiler::RunInfo& i) { return i.id == r.run_id; });
    t.lines.push_back({r, run == runs.end() ? std::string() : run->name});
    if (r.tpot_ms) t.tpot_scale_ms = std::max(t.tpot_scale_ms, r.tpot_ms->p99);
    t.any_breakdown = t.any_breakdown || r.step || r.e2e_ms || r.gather_ms || r.generate_ms ||
                      r.train_ms || r.other_ms || r.samples_per_s;
  }
  return t;
}

double bar_fraction(double ms, double scale_ms) {
  return scale_ms > 0 ? std::clamp(ms / scale_ms, 0.0, 1.0) : 0.0;
}

}  // namespace hybrid::gui
