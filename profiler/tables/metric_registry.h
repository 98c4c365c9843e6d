// What a sweep's metric measures and which way is better, by name: the one
// registry the leaderboards read instead of guessing from the name. The names
// are the trial columns a sweep stores as its metric (tokens_per_s,
// samples_per_s, flops_per_s, latency_ms) and the autotuner's short aliases
// (tokens, throughput, flops, latency).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace hybrid::profiler {

enum class MetricDirection : uint8_t { higher_is_better, lower_is_better };

struct MetricInfo {
  std::string name;  // as given
  std::string unit;  // "tokens/s", "ms", ...; "" when unknown
  MetricDirection direction = MetricDirection::higher_is_better;
  bool known = false;  // in the registry (or a *_ms / *_per_s / *_bytes name)

  bool higher_is_better() const { return direction == MetricDirection::higher_is_better; }
  // True when a is strictly better than b.
  bool better(double a, double b) const { return higher_is_better() ? a > b : a < b; }
};

// Registered names first; then by suffix: *_ms (a time: lower is better),
// *_bytes (memory: lower), *_per_s (a rate: higher). Anything else is taken as
// higher-is-better with known = false.
MetricInfo metric_info(std::string_view name);

std::string_view to_string(MetricDirection d);  // "higher is better" | "lower is better"

}  // namespace hybrid::profiler
