#include "autotune/metric.h"

#include <fmt/format.h>

#include "autotune/tune_error.h"
#include "base/units.h"

namespace hybrid::autotune {

Metric parse_metric(std::string_view name) {
  if (name == "throughput" || name == "samples_per_s") return Metric::throughput;
  if (name == "tokens" || name == "tokens_per_s") return Metric::tokens;
  if (name == "latency" || name == "latency_ms") return Metric::latency;
  if (name == "flops" || name == "flops_per_s") return Metric::flops;
  throw TuneError(fmt::format(
      "metric must be one of throughput, latency, flops, tokens_per_s, got \"{}\"", name));
}

std::string_view metric_name(Metric m) {
  switch (m) {
    case Metric::throughput:
      return "throughput";
    case Metric::tokens:
      return "tokens_per_s";
    case Metric::latency:
      return "latency";
    case Metric::flops:
      return "flops";
  }
  return "?";
}

std::string_view metric_column(Metric m) {
  switch (m) {
    case Metric::throughput:
      return "samples_per_s";
    case Metric::tokens:
      return "tokens_per_s";
    case Metric::latency:
      return "latency_ms";
    case Metric::flops:
      return "flops_per_s";
  }
  return "?";
}

profiler::MetricInfo metric_info(Metric m) { return profiler::metric_info(metric_column(m)); }

bool higher_is_better(Metric m) { return metric_info(m).higher_is_better(); }

bool better(Metric m, double a, double b) { return metric_info(m).better(a, b); }

std::string format_metric(Metric m, double v) {
  switch (m) {
    case Metric::throughput:
      return fmt::format("{:.1f} samples/s", v);
    case Metric::tokens:
      return fmt::format("{:.0f} tokens/s", v);
    case Metric::latency:
      return fmt::format("{:.1f} ms", v);
    case Metric::flops:
      return base::format_flop_rate(v);
  }
  return "?";
}

double metric_value(Metric m, const Measurement& x) {
  switch (m) {
    case Metric::throughput:
      return x.samples_per_s;
    case Metric::tokens:
      return x.tokens_per_s;
    case Metric::latency:
      return x.step_ms;
    case Metric::flops:
      return x.flops_per_s;
  }
  return 0;
}

double metric_from_step_time(Metric m, double step_s, double samples_per_step,
                             double tokens_per_step, double flops_per_step) {
  switch (m) {
    case Metric::throughput:
      return samples_per_step / step_s;
    case Metric::tokens:
      return tokens_per_step / step_s;
    case Metric::latency:
      return step_s * 1e3;
    case Metric::flops:
      return flops_per_step / step_s;
  }
  return 0;
}

}  // namespace hybrid::autotune
