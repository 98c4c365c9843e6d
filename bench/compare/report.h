// Rendering a comparison: a terminal table, Markdown for a pull-request comment,
// and JSON for tools. All three carry the same facts.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "bench/compare/comparison.h"

namespace hybrid::bench {

// "850 ns", "12.3 us", "4.56 ms", "1.20 s" (three significant digits).
std::string format_time_ns(double ns);

// "+30.0%", "-4.2%", "+0.0%".
std::string format_change(double change);

std::string render_table(const ComparisonReport& report);
std::string render_markdown(const ComparisonReport& report);
nlohmann::json report_to_json(const ComparisonReport& report);

}  // namespace hybrid::bench
