// The profiling window: which steps the tracer records (per-module scopes,
// communication, CUPTI's device records), decided here and nowhere else. The
// trainer asks it at each step; the run recorder reads it to know which steps
// it has profiles of (the FLOPs report's step, the profiled rows).
#pragma once

#include <cstdint>

#include "engine/config/config.h"

namespace hybrid::profiler {
class Tracer;
}

namespace hybrid {

class ProfileWindow {
 public:
  ProfileWindow() = default;  // traces no step
  // Steps [begin, end), numbered from 1.
  ProfileWindow(int64_t begin, int64_t end) : begin_(begin), end_(end) {}

  // The window of a run of `steps` steps after global step `done`, when anything
  // asks for per-module profiles (the FLOPs profiler, a trace, the run store
  // when `recording`): DeepSpeed's flops_profiler.profile_step, or the third
  // step (past warm-up); one step for the FLOPs profiler alone, else
  // profiler.trace_steps. Empty when nothing asks.
  static ProfileWindow for_run(const engine::Config& cfg, bool recording, int64_t done,
                               int64_t steps);

  bool traced(int64_t step) const { return step >= begin_ && step < end_; }
  bool empty() const { return end_ <= begin_; }
  int64_t first() const { return begin_; }  // the first traced step

  // Before step `step` runs: its events carry its number, and the tracer is on
  // inside the window, off outside.
  void begin_step(profiler::Tracer& tracer, int64_t step) const;
  // Once the step's work has finished (the device waited for): nothing after it
  // is traced.
  static void end_step(profiler::Tracer& tracer);

 private:
  int64_t begin_ = 0, end_ = 0;
};

}  // namespace hybrid
