// What a sweep optimises, and in which direction. DeepSpeed's names:
// throughput (samples/s, higher is better), latency (ms per optimizer step,
// LOWER is better: the best trial is the fastest), flops (achieved model
// FLOP/s, higher is better); tokens/s is offered too.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/tables/metric_registry.h"

namespace hybrid::autotune {

enum class Metric { throughput, tokens, latency, flops };

// "throughput" | "samples_per_s" | "tokens" | "tokens_per_s" | "latency" |
// "latency_ms" | "flops" | "flops_per_s"; throws TuneError naming the value.
Metric parse_metric(std::string_view name);
std::string_view metric_name(Metric m);    // "throughput", ...
std::string_view metric_column(Metric m);  // what sweeps.metric stores: "samples_per_s", ...
// Unit and direction from the one registry every reader of sweeps uses.
profiler::MetricInfo metric_info(Metric m);
bool higher_is_better(Metric m);
// True when a is strictly better than b.
bool better(Metric m, double a, double b);
// The value with its unit: "1234.5 samples/s", "12.3 ms", "1.52 GFLOP/s".
std::string format_metric(Metric m, double v);

// One trial's measurements over the profiled steps.
struct Measurement {
  double step_ms = 0;
  double samples_per_s = 0;
  double tokens_per_s = 0;
  double flops_per_s = 0;
  std::vector<double> window_ms;  // the step times the figure was taken from (empty: none)
};
double metric_value(Metric m, const Measurement& x);
// The metric a step time implies for a candidate (the cost model's predictions).
double metric_from_step_time(Metric m, double step_s, double samples_per_step,
                             double tokens_per_step, double flops_per_step);

}  // namespace hybrid::autotune
