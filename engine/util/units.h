// Human-readable units for every printed number: bytes, durations, rates.
#pragma once

#include <cstdint>
#include <string>

namespace hybrid::engine {

std::string format_bytes(uint64_t bytes);      // "1.50 GiB", "512 B"
std::string format_duration(double seconds);   // "850 ms", "2m05s"
std::string format_flops(double flops_per_s);  // "152.3 GFLOP/s"
std::string format_count(double n);            // "124.4M"

}  // namespace hybrid::engine
