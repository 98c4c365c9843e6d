#include "profiler/tables/metric_registry.h"

#include <array>
#include <utility>

namespace hybrid::profiler {

namespace {

struct Entry {
  std::string_view name;
  std::string_view unit;
  MetricDirection direction;
};

constexpr auto kHigher = MetricDirection::higher_is_better;
constexpr auto kLower = MetricDirection::lower_is_better;

constexpr std::array kRegistry{
    Entry{"tokens_per_s", "tokens/s", kHigher},
    Entry{"tokens", "tokens/s", kHigher},
    Entry{"samples_per_s", "samples/s", kHigher},
    Entry{"throughput", "samples/s", kHigher},
    Entry{"flops_per_s", "FLOP/s", kHigher},
    Entry{"flops", "FLOP/s", kHigher},
    Entry{"latency_ms", "ms", kLower},
    Entry{"latency", "ms", kLower},
    Entry{"step_ms", "ms", kLower},
    Entry{"mfu", "", kHigher},
};

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

MetricInfo metric_info(std::string_view name) {
  auto info = [name](std::string unit, MetricDirection d, bool known = true) {
    return MetricInfo{std::string(name), std::move(unit), d, known};
  };
  for (const Entry& e : kRegistry)
    if (e.name == name) return info(std::string(e.unit), e.direction);
  if (ends_with(name, "_ms")) return info(std::string("ms"), kLower);
  if (ends_with(name, "_bytes")) return info(std::string("B"), kLower);
  if (ends_with(name, "_per_s"))
    return info(std::string(name.substr(0, name.size() - 6)) + "/s", kHigher);
  return info(std::string(), kHigher, false);
}

std::string_view to_string(MetricDirection d) {
  return d == kHigher ? "higher is better" : "lower is better";
}

}  // namespace hybrid::profiler
