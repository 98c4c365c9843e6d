// Numbers with units, the same way in every tool's output: "1.50 GiB",
// "12.35 ms", "152.30 TFLOP/s", "124.44 M".
#pragma once

#include <cstdint>
#include <string>

namespace hybrid::base {

std::string format_bytes(uint64_t bytes);         // "1.50 GiB", "512 B" (binary prefixes)
std::string format_ms(double ms);                 // "12.35 ms", "0.042 ms", "1234.5 ms"
std::string format_duration(double seconds);      // "850.0 ms", "12.30 s", "2m05s", "1h02m"
std::string format_flop(double flop);             // "3.70 TFLOP" (a count)
std::string format_flop_rate(double flop_per_s);  // "152.30 TFLOP/s"
std::string format_count(double n);               // "124.44 M", "512"
std::string format_percent(double fraction);      // 0.123 → "12.30%"; "-" when not finite
std::string format_gbps(double gbps);             // "12.34 GB/s"

}  // namespace hybrid::base
