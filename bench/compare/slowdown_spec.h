// The injected-slowdown switch, HYBRID_BENCH_SLOWDOWN="<name-regex>=<fraction>[;...]":
// a benchmark whose name matches a regex does `fraction` more work per iteration
// (0.30: about 30 % slower). It exists to prove that the regression check catches a
// real slowdown; bench/slowdown.h applies it inside benchmark loops. Header-only so
// that benchmark executables need no extra library.
#pragma once

#include <cstdlib>
#include <regex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace hybrid::bench {

inline constexpr const char* kSlowdownVariable = "HYBRID_BENCH_SLOWDOWN";

struct SlowdownRule {
  std::string pattern;
  std::regex regex;
  double fraction = 0;  // extra work per iteration, relative (0.3 = +30 %)
};

// Rules are separated by ';'; each is split at its last '=' (regexes may contain '=').
// The fraction is a number ("0.3") or a percentage ("30%") in [0, 10].
// Throws std::invalid_argument naming HYBRID_BENCH_SLOWDOWN and the rule at fault.
inline std::vector<SlowdownRule> parse_slowdown_spec(std::string_view spec) {
  std::vector<SlowdownRule> rules;
  auto fail = [](std::string_view rule, const std::string& why) {
    throw std::invalid_argument(std::string(kSlowdownVariable) + ": rule '" + std::string(rule) +
                                "' " + why +
                                " (expected <name-regex>=<fraction>, e.g. matmul=0.30)");
  };
  std::size_t start = 0;
  while (start <= spec.size()) {
    std::size_t end = spec.find(';', start);
    if (end == std::string_view::npos) end = spec.size();
    std::string_view rule = spec.substr(start, end - start);
    start = end + 1;
    while (!rule.empty() && rule.front() == ' ') rule.remove_prefix(1);
    while (!rule.empty() && rule.back() == ' ') rule.remove_suffix(1);
    if (rule.empty()) continue;
    std::size_t eq = rule.rfind('=');
    if (eq == std::string_view::npos) fail(rule, "has no '='");
    if (eq == 0) fail(rule, "has an empty name regex");
    std::string value(rule.substr(eq + 1));
    bool percent = !value.empty() && value.back() == '%';
    if (percent) value.pop_back();
    char* parse_end = nullptr;
    double fraction = value.empty() ? -1 : std::strtod(value.c_str(), &parse_end);
    if (value.empty() || parse_end != value.c_str() + value.size())
      fail(rule, "has no number after '='");
    if (percent) fraction /= 100.0;
    if (!(fraction >= 0 && fraction <= 10)) fail(rule, "has a fraction outside [0, 10]");
    SlowdownRule r;
    r.pattern = std::string(rule.substr(0, eq));
    try {
      r.regex = std::regex(r.pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      fail(rule, std::string("has an invalid regex: ") + e.what());
    }
    r.fraction = fraction;
    rules.push_back(std::move(r));
  }
  return rules;
}

// The fraction of the first rule whose regex is found in `name` (regex_search, so
// "matmul" matches "matmul/768/3072"); 0 when none matches.
inline double slowdown_fraction(const std::vector<SlowdownRule>& rules, std::string_view name) {
  for (const auto& r : rules) {
    if (std::regex_search(name.begin(), name.end(), r.regex)) return r.fraction;
  }
  return 0.0;
}

}  // namespace hybrid::bench
