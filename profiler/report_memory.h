// Memory per rank and tracking-allocator category: current, peak, and the memory
// model's prediction with the measured/predicted ratio.
#pragma once

#include <string>

#include "profiler/profile_data.h"

namespace hybrid::profiler {

std::string memory_report(const RunProfile& profile);

}  // namespace hybrid::profiler
