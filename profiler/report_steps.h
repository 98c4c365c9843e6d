// The step table of a run: loss, learning rate, loss scale, skipped steps, time,
// tokens/s and achieved FLOP/s (and, for a pipeline run, each step's bubble:
// the mean over ranks of their waits on the stages' transfers, and its share
// of the step), with a summary line; and, when the run recorded them
// (wall_clock_breakdown), DeepSpeed's wall-clock timers.
#pragma once

#include <string>

#include "profiler/profile_data.h"

namespace hybrid::profiler {

std::string steps_report(const RunProfile& profile);

}  // namespace hybrid::profiler
