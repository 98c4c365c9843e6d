// Small text helpers shared across folders.
#pragma once

#include <optional>
#include <string_view>

namespace hybrid::base {

// Whether `what` occurs in `s`, ASCII letters compared without case.
bool contains_ignore_case(std::string_view s, std::string_view what);

// `s` without leading and trailing spaces, tabs and carriage returns.
std::string_view trim(std::string_view s);

// The whole of `s` as a number ("12", "-3"; "1.5e3" for doubles), nullopt when
// anything else is there ("", "12x", " 12", "0x10") or it does not fit.
std::optional<long long> parse_int(std::string_view s);
std::optional<double> parse_double(std::string_view s);

}  // namespace hybrid::base
