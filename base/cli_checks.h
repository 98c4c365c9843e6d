// Command-line checks every tool shares. CLI11's own range validators say
// "Value 0 not in range 0.000000 to 1.797693e+308" and its parse errors exit
// with its own codes (105, 106, ...), which no tool documents: these say what
// the option needs in our words ("--steps: must be at least 1, got 0") and end
// with the status the tool documents for a bad argument.
// Header-only: it needs CLI11, which the tools link and hybrid_base does not.
#pragma once

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "base/text.h"

namespace hybrid::base {

namespace cli_detail {

// A validator that refuses a number for which `refuse` returns a reason. A value
// that is not a number passes: CLI11's conversion then names it.
template <class Refuse>
CLI::Validator number_check(const std::string& description, Refuse refuse) {
  return CLI::Validator(
      [refuse](std::string& text) -> std::string {
        const std::optional<double> v = parse_double(trim(text));
        if (!v) return {};
        const std::string why = refuse(*v);
        return why.empty() ? why : fmt::format("must be {}, got {}", why, text);
      },
      description);
}

}  // namespace cli_detail

// At least `lo`: at_least(1) for counts (steps, ranks, trials, tokens).
inline CLI::Validator at_least(double lo) {
  return cli_detail::number_check(fmt::format("NUMBER >= {}", lo), [lo](double v) {
    return v >= lo ? std::string() : fmt::format("at least {}", lo);
  });
}

// Above `lo`: greater_than(0) for durations and fractions.
inline CLI::Validator greater_than(double lo) {
  return cli_detail::number_check(fmt::format("NUMBER > {}", lo), [lo](double v) {
    return v > lo ? std::string() : fmt::format("greater than {}", lo);
  });
}

// In [lo, hi].
inline CLI::Validator between(double lo, double hi) {
  return cli_detail::number_check(fmt::format("NUMBER in [{} - {}]", lo, hi), [lo, hi](double v) {
    return v >= lo && v <= hi ? std::string() : fmt::format("between {} and {}", lo, hi);
  });
}

// Parses the command line. nullopt: go on; otherwise the status to exit with,
// 0 after --help, `usage_status` (the tool's documented status for a bad
// argument) after any mistake, which CLI11 has printed with a hint to --help.
inline std::optional<int> parse_command_line(CLI::App& app, int argc, const char* const* argv,
                                             int usage_status) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : usage_status;
  }
  return std::nullopt;
}

}  // namespace hybrid::base
