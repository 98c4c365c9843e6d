// The comparison's options and names: parsing and checking what the command
// line gives (comparison.h), and the metric a pair of runs asks for.
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <stdexcept>
#include <string>

#include "bench/compare/comparison.h"

namespace hybrid::bench {

std::string_view verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::Regression:
      return "REGRESSION";
    case Verdict::Improvement:
      return "IMPROVEMENT";
    case Verdict::NoChange:
      return "no change";
    case Verdict::NotSignificant:
      return "not significant";
  }
  return "?";
}

Correction parse_correction(std::string_view text) {
  if (text == "none") return Correction::None;
  if (text == "holm") return Correction::Holm;
  throw std::invalid_argument(fmt::format("--correction must be none or holm, got '{}'", text));
}

TestKind parse_test_kind(std::string_view text) {
  if (text == "paired") return TestKind::Paired;
  if (text == "unpaired") return TestKind::Unpaired;
  throw std::invalid_argument(fmt::format("--test must be paired or unpaired, got '{}'", text));
}

std::string_view test_kind_name(TestKind kind) {
  return kind == TestKind::Paired ? "paired" : "unpaired";
}

Metric default_metric(const BenchmarkFile& baseline, const BenchmarkFile& current,
                      std::string* note) {
  auto suite_metric = [](const BenchmarkFile& f) -> std::string {
    auto suite = f.context.find("hybrid_suite");
    if (suite == f.context.end() || !suite->is_object()) return {};
    auto m = suite->find("metric");
    return m != suite->end() && m->is_string() ? m->get<std::string>() : std::string();
  };
  const std::string a = suite_metric(baseline), b = suite_metric(current);
  if (!a.empty() && a == b) return parse_metric(a);
  if (note && (!a.empty() || !b.empty())) {
    *note = fmt::format(
        "the runs' suites name different metrics ('{}' vs '{}'): real_time used (pass --metric)",
        a.empty() ? "none" : a, b.empty() ? "none" : b);
  }
  return Metric::RealTime;
}

std::string_view correction_name(Correction correction) {
  return correction == Correction::Holm ? "holm" : "none";
}

double parse_threshold(std::string_view text) {
  std::string_view number = text;
  bool percent = false;
  if (!number.empty() && number.back() == '%') {
    percent = true;
    number.remove_suffix(1);
  }
  double value = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size() ||
      !std::isfinite(value) || value < 0) {
    throw std::invalid_argument(fmt::format(
        "--threshold must be a non-negative fraction or percentage (0.05 or 5%), got '{}'", text));
  }
  return percent ? value / 100.0 : value;
}

void validate(const CompareOptions& options) {
  if (!(options.alpha > 0 && options.alpha < 1)) {
    throw std::invalid_argument(fmt::format("--alpha must be in (0, 1), got {}", options.alpha));
  }
  if (!(options.calibration_alpha > 0 && options.calibration_alpha < 1)) {
    throw std::invalid_argument(
        fmt::format("--calibration-alpha must be in (0, 1), got {}", options.calibration_alpha));
  }
  if (!(options.threshold >= 0) || !std::isfinite(options.threshold)) {
    throw std::invalid_argument(
        fmt::format("--threshold must be non-negative, got {}", options.threshold));
  }
}

}  // namespace hybrid::bench
