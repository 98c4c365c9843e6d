#include "engine/profile_window.h"

#include <algorithm>

#include "profiler/tracer.h"

namespace hybrid {

ProfileWindow ProfileWindow::for_run(const engine::Config& cfg, bool recording, int64_t done,
                                     int64_t steps) {
  const bool wanted = cfg.flops_profiler.enabled || cfg.profiler.trace ||
                      !cfg.profiler.chrome_trace.empty() || recording;
  if (!wanted) return {};
  const int64_t first = done + 1;
  const int64_t at =
      cfg.flops_profiler.enabled ? cfg.flops_profiler.profile_step : std::min<int64_t>(3, steps);
  const int64_t begin = first + std::max<int64_t>(at, 1) - 1;
  const int64_t len =
      cfg.flops_profiler.enabled && !cfg.profiler.trace ? 1 : std::max(1, cfg.profiler.trace_steps);
  return {begin, std::min(first + steps, begin + len)};
}

void ProfileWindow::begin_step(profiler::Tracer& tracer, int64_t step) const {
  tracer.set_enabled(traced(step));
  tracer.set_step(int32_t(step));
}

void ProfileWindow::end_step(profiler::Tracer& tracer) { tracer.set_enabled(false); }

}  // namespace hybrid
