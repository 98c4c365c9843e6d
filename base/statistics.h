// Summary statistics over samples of measurements: the one median of the project.
#pragma once

#include <span>

namespace hybrid::base {

// The middle value of the sorted sample, or the mean of the two middle values
// when the count is even; 0 for an empty sample. NaNs sort last.
double median(std::span<const double> values);

// Arithmetic mean; 0 for an empty sample.
double mean(std::span<const double> values);

}  // namespace hybrid::base
