// Small text helpers shared across folders.
#pragma once

#include <string_view>

namespace hybrid::base {

// Whether `what` occurs in `s`, ASCII letters compared without case.
bool contains_ignore_case(std::string_view s, std::string_view what);

}  // namespace hybrid::base
