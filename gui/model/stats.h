// A value over ranks for the view-models (profiler::Spread); medians come from
// base/statistics.h, the one median of the project.
#pragma once

#include "profiler/spread.h"

namespace hybrid::gui {

using profiler::Spread;

}  // namespace hybrid::gui
