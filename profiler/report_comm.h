// The communication report: collectives by op and message size (count, latency,
// algbw, busbw, over every rank) and, per step, the time collectives took against
// the part of it the compute lane waited for (exposed).
#pragma once

#include <string>

#include "profiler/profile_data.h"

namespace hybrid::profiler {

std::string comm_report(const RunProfile& profile);

}  // namespace hybrid::profiler
